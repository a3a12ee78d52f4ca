import { expect } from "chai";
import { canonicalJson, toolDefinitionHash } from "../../plugin/mcp-client/tool-hash.js";

describe("mcp-client tool hash", () => {
  const schema = {
    type: "object",
    properties: { text: { type: "string", description: "Text" }, n: { type: "number" } },
    required: ["text"],
  };

  it("is sha256 hex and stable under key reordering at any depth", () => {
    const a = toolDefinitionHash({ name: "echo", description: "Echoes.", inputSchema: schema });
    const reordered = {
      required: ["text"],
      properties: { n: { type: "number" }, text: { description: "Text", type: "string" } },
      type: "object",
    };
    const b = toolDefinitionHash({ inputSchema: reordered, description: "Echoes.", name: "echo" });
    expect(a).to.match(/^[0-9a-f]{64}$/);
    expect(b).to.equal(a);
  });

  it("treats a missing description as the empty string", () => {
    expect(toolDefinitionHash({ name: "t", inputSchema: schema })).to.equal(
      toolDefinitionHash({ name: "t", description: "", inputSchema: schema }),
    );
  });

  it("changes when the name, description or schema changes (array order counts)", () => {
    const base = toolDefinitionHash({ name: "echo", description: "Echoes.", inputSchema: schema });
    const variants = [
      toolDefinitionHash({ name: "echo2", description: "Echoes.", inputSchema: schema }),
      toolDefinitionHash({ name: "echo", description: "Echoes!", inputSchema: schema }),
      toolDefinitionHash({
        name: "echo",
        description: "Echoes.",
        inputSchema: { ...schema, required: ["text", "n"] },
      }),
      toolDefinitionHash({
        name: "echo",
        description: "Echoes.",
        inputSchema: { ...schema, properties: { ...schema.properties, n: { type: "integer" } } },
      }),
    ];
    for (const variant of variants) expect(variant).to.not.equal(base);
    expect(new Set(variants).size).to.equal(variants.length);
  });

  it("writes canonical JSON like JSON.stringify apart from key order", () => {
    expect(canonicalJson({ b: 1, a: [3, undefined, { d: null, c: "x" }], u: undefined })).to.equal(
      '{"a":[3,null,{"c":"x","d":null}],"b":1}',
    );
    expect(canonicalJson({ n: Number.NaN, s: "é\n" })).to.equal(JSON.stringify({ n: null, s: "é\n" }));
  });
});
