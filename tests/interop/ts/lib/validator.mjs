// Validates JSON-RPC frames against the JSON Schema that ships inside the
// official @agentclientprotocol/sdk package (schema/v1/schema.json by default;
// `new FrameValidator({ schemaVersion: "v2" })` for schema/v2/schema.json, which
// the protocol v2 drivers in ../v2/ use).
//
// The schema's top-level `anyOf` has an "Agent" branch (every message an
// agent may send: AgentRequest | AgentResponse | AgentNotification). Those
// unions are deliberately loose (an `ExtResponse` result accepts anything),
// so on top of the envelope check every frame is also validated by method:
//   * agent -> client request:  params  vs the def with x-side=client, x-method=M, *Request
//   * agent -> client notif.:   params  vs the def with x-side=client, x-method=M, *Notification
//   * agent response to M:      result  vs the def with x-side=agent,  x-method=M, *Response
//                               error   vs #/$defs/Error
// Each def in the schema carries `x-side` / `x-method`, which is how the
// method -> definition map is built (no hand-maintained table).

import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import Ajv2020Module from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;
const addFormats = addFormatsModule.default ?? addFormatsModule;

/**
 * `schemaVersion`: "v1" or "v2", the directory under the package's schema/; `unstable`: its
 * schema.unstable.json (the stable schema plus the unstable methods and fields) instead.
 */
export function loadSdkSchema(schemaVersion = "v1", unstable = false) {
  const require = createRequire(import.meta.url);
  const file = unstable ? "schema.unstable.json" : "schema.json";
  const path = require.resolve(`@agentclientprotocol/sdk/schema/${schemaVersion}/${file}`);
  const schema = JSON.parse(readFileSync(path, "utf8"));
  // package.json is not in the package's "exports"; it sits two levels above schema/<version>/.
  const pkgPath = join(dirname(path), "..", "..", "package.json");
  const version = JSON.parse(readFileSync(pkgPath, "utf8")).version;
  return { schema, path, version };
}

function intFormat(min, max) {
  return { type: "number", validate: (n) => Number.isInteger(n) && n >= min && n <= max };
}

/** Methods each schema version must define: proof that the x-method mapping found them. */
const REQUIRED_METHODS = {
  v1: { client: ["session/update", "session/request_permission", "fs/read_text_file"], agent: ["initialize", "session/new", "session/prompt"] },
  v2: { client: ["session/update", "session/request_permission"], agent: ["initialize", "session/new", "session/prompt", "session/resume", "session/close"] },
};

export class FrameValidator {
  /** `schemaVersion`: "v1" (the default) or "v2"; `unstable`: the unstable schema. */
  constructor({ schemaVersion = "v1", unstable = false } = {}) {
    const { schema, path, version } = loadSdkSchema(schemaVersion, unstable);
    const SCHEMA_ID = `urn:acp-interop:sdk-schema-${schemaVersion}${unstable ? "-unstable" : ""}`;
    this.schemaVersion = schemaVersion;
    this.schemaPath = path;
    this.sdkVersion = version;
    const ajv = new Ajv2020({
      strict: true,
      strictTypes: false, // the generated schema mixes `type: [x, "null"]` with keywords for x
      allowUnionTypes: true,
      allErrors: true,
      validateFormats: true,
    });
    addFormats(ajv);
    // Non-standard numeric formats used by the generated schema.
    ajv.addFormat("int32", intFormat(-(2 ** 31), 2 ** 31 - 1));
    ajv.addFormat("int64", intFormat(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER));
    ajv.addFormat("uint16", intFormat(0, 65535));
    ajv.addFormat("uint32", intFormat(0, 2 ** 32 - 1));
    ajv.addFormat("uint64", intFormat(0, Number.MAX_SAFE_INTEGER));
    ajv.addFormat("double", { type: "number", validate: (n) => Number.isFinite(n) });
    // Vendor annotations (x-side, x-method, x-deserialize-*, x-docs-ignore) and the
    // OpenAPI-style `discriminator` hint are annotations only; the `oneOf` next to each
    // discriminator does the actual validation.
    const vendor = new Set(["discriminator"]);
    const walk = (node) => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === "object") {
        for (const [k, v] of Object.entries(node)) {
          if (k.startsWith("x-")) vendor.add(k);
          walk(v);
        }
      }
    };
    walk(schema);
    ajv.addVocabulary([...vendor]);
    ajv.addSchema({ ...schema, $id: SCHEMA_ID });
    this.ajv = ajv;

    const defs = schema.$defs;
    const agentBranch = schema.anyOf.findIndex((b) => b.title === "Agent");
    if (agentBranch < 0) throw new Error("schema has no top-level 'Agent' message branch");
    this.envelope = ajv.compile({ $ref: `${SCHEMA_ID}#/anyOf/${agentBranch}` });
    this.errorObject = ajv.compile({ $ref: `${SCHEMA_ID}#/$defs/Error` });

    // method -> compiled validators, derived from x-side / x-method.
    this.clientRequestParams = new Map(); // agent -> client requests
    this.clientNotificationParams = new Map(); // agent -> client notifications
    this.agentResults = new Map(); // results of client -> agent requests
    this.defNames = new Map();
    for (const [name, def] of Object.entries(defs)) {
      const side = def["x-side"];
      const method = def["x-method"];
      if (!side || !method) continue;
      const compiled = () => ajv.compile({ $ref: `${SCHEMA_ID}#/$defs/${name}` });
      if (side === "client" && name.endsWith("Request")) {
        this.clientRequestParams.set(method, compiled());
        this.defNames.set(`req:${method}`, name);
      } else if ((side === "client" || side === "protocol") && name.endsWith("Notification")) {
        // `protocol` notifications ($/cancel_request) go both ways.
        this.clientNotificationParams.set(method, compiled());
        this.defNames.set(`notif:${method}`, name);
      } else if (side === "agent" && name.endsWith("Response")) {
        this.agentResults.set(method, compiled());
        this.defNames.set(`res:${method}`, name);
      }
    }
    // Per-variant validators for SessionUpdate, used only to produce a precise
    // error message (the oneOf error list of the whole union is hard to read).
    // v1 spells the union `oneOf`, v2 `anyOf` (with an open "other" branch).
    this.updateVariants = new Map();
    const unionKey = defs.SessionUpdate?.oneOf ? "oneOf" : "anyOf";
    (defs.SessionUpdate?.[unionKey] ?? []).forEach((variant, i) => {
      const tag = variant.properties?.sessionUpdate?.const;
      if (tag) this.updateVariants.set(tag, ajv.compile({ $ref: `${SCHEMA_ID}#/$defs/SessionUpdate/${unionKey}/${i}` }));
    });
    const required = REQUIRED_METHODS[schemaVersion] ?? REQUIRED_METHODS.v1;
    for (const m of required.client) {
      if (!this.clientNotificationParams.has(m) && !this.clientRequestParams.has(m)) {
        throw new Error(`schema lacks a definition for ${m}; x-method mapping broken`);
      }
    }
    for (const m of required.agent) {
      if (!this.agentResults.has(m)) throw new Error(`schema lacks a response definition for ${m}`);
    }
  }

  static describeErrors(validate) {
    return (validate.errors ?? [])
      .slice(0, 8)
      .map((e) => `${e.instancePath || "/"} ${e.message}${e.params ? " " + JSON.stringify(e.params) : ""}`)
      .join("; ");
  }

  /**
   * Validate one frame sent by the agent.
   * @param msg parsed JSON value
   * @param methodOfId function(id) -> method name of the client request with that id, or undefined
   * @returns array of problem strings (empty when valid)
   */
  validateAgentFrame(msg, methodOfId) {
    const problems = [];
    if (msg === null || typeof msg !== "object" || Array.isArray(msg)) {
      return [`frame is not a JSON object (got ${Array.isArray(msg) ? "array" : typeof msg})`];
    }
    if (msg.jsonrpc !== "2.0") problems.push(`"jsonrpc" must be "2.0", got ${JSON.stringify(msg.jsonrpc)}`);
    if (!this.envelope(msg)) {
      problems.push(`envelope does not match schema 'Agent' message: ${FrameValidator.describeErrors(this.envelope)}`);
    }
    const hasMethod = Object.hasOwn(msg, "method");
    const hasId = Object.hasOwn(msg, "id");
    if (hasMethod && hasId) {
      const v = this.clientRequestParams.get(msg.method);
      if (!v) problems.push(`agent sent request with unknown/unexpected method ${JSON.stringify(msg.method)}`);
      else if (!v(msg.params)) {
        problems.push(
          `params of ${msg.method} do not match ${this.defNames.get(`req:${msg.method}`)}: ${FrameValidator.describeErrors(v)}`,
        );
      }
      if (!(typeof msg.id === "string" || Number.isInteger(msg.id))) {
        problems.push(`request id should be a string or integer, got ${JSON.stringify(msg.id)}`);
      }
    } else if (hasMethod) {
      const v = this.clientNotificationParams.get(msg.method);
      if (!v) problems.push(`agent sent notification with unknown/unexpected method ${JSON.stringify(msg.method)}`);
      else if (!v(msg.params)) {
        let detail = FrameValidator.describeErrors(v);
        const tag = msg.params?.update?.sessionUpdate;
        const variant = msg.method === "session/update" ? this.updateVariants.get(tag) : undefined;
        if (variant && !variant(msg.params.update)) {
          detail = `as a '${tag}' update: ${FrameValidator.describeErrors(variant).replaceAll(/(^|; )\//g, "$1/update/")}`;
        } else if (msg.method === "session/update" && tag !== undefined && !variant) {
          detail = `unknown sessionUpdate ${JSON.stringify(tag)}; ${detail}`;
        }
        problems.push(`params of ${msg.method} do not match ${this.defNames.get(`notif:${msg.method}`)}: ${detail}`);
      }
    } else if (hasId) {
      const hasResult = Object.hasOwn(msg, "result");
      const hasError = Object.hasOwn(msg, "error");
      if (hasResult === hasError) {
        problems.push(`response must have exactly one of "result"/"error" (has result: ${hasResult}, error: ${hasError})`);
      }
      if (hasError && !this.errorObject(msg.error)) {
        problems.push(`error object invalid: ${FrameValidator.describeErrors(this.errorObject)}`);
      }
      if (hasResult) {
        const method = methodOfId(msg.id);
        if (method === undefined) {
          problems.push(`successful response for id ${JSON.stringify(msg.id)} that the client never used`);
        } else {
          const v = this.agentResults.get(method);
          if (!v) problems.push(`no schema definition for the result of ${method}`);
          else if (!v(msg.result)) {
            problems.push(
              `result of ${method} does not match ${this.defNames.get(`res:${method}`)}: ${FrameValidator.describeErrors(v)}`,
            );
          }
        }
      }
    } else {
      problems.push("frame has neither 'method' nor 'id'");
    }
    const extra = Object.keys(msg).filter((k) => !["jsonrpc", "id", "method", "params", "result", "error"].includes(k));
    if (extra.length) problems.push(`unexpected top-level members: ${extra.join(", ")}`);
    return problems;
  }
}
