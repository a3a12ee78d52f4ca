import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { DEFAULT_CATALOG, loadCatalog } from "../host-shim/catalog.js";

describe("the catalog file", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "catalog-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("loads the shipped catalog", () => {
    expect(loadCatalog(DEFAULT_CATALOG).size).to.be.greaterThan(0);
  });

  it("names a missing file plainly, not with an error about the error", () => {
    const missing = join(dir, "nope.json");
    expect(() => loadCatalog(missing)).to.throw(
      `mcp-manage: the catalog ${missing} is invalid (no such file)`,
    );
  });

  it("names the field that fails the schema", () => {
    const file = join(dir, "bad.json");
    writeFileSync(file, JSON.stringify({ version: 1, entries: [{ id: "x", title: "", fields: [] }] }));
    expect(() => loadCatalog(file)).to.throw(/is invalid at entries\.0\.title/);
  });

  it("refuses a file that is not JSON", () => {
    const file = join(dir, "garbage.json");
    writeFileSync(file, "{");
    expect(() => loadCatalog(file)).to.throw(`mcp-manage: the catalog ${file} is invalid`);
  });
});
