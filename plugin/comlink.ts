// comlink ships UMD without an exports map; this is the one place that knows how to load it under NodeNext.
import Comlink from "comlink";
import nodeAdapter from "comlink/dist/umd/node-adapter.js";

export type { Remote } from "comlink";
export { Comlink };

type NodeEndpoint = typeof nodeAdapter.default;
/** Adapts a node:worker_threads MessagePort to the Endpoint shape comlink expects. */
export const nodeEndpoint = nodeAdapter as unknown as NodeEndpoint;
