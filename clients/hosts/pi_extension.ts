// Written by machine for one run of the pi harness; deleted when the run ends.
// Registers the run's tools, served by machine over MCP (streamable HTTP), as pi tools.
import { getModel } from "@mariozechner/pi-ai";

const CONFIG = __MACHINE_CONFIG__;
const TOOLS_URL = process.env.__URL_ENV__ ?? "";
const TOKEN = process.env.__TOKEN_ENV__ ?? "";
delete process.env.__TOKEN_ENV__; // nothing pi starts inherits it
const OFFERED = "2025-11-25";

let session = undefined;
let protocol = OFFERED;
let lastId = 0;
let opening = undefined;

function headers(extra) {
  const all = { authorization: `Bearer ${TOKEN}`, "mcp-protocol-version": protocol, ...extra };
  if (session) all["mcp-session-id"] = session;
  return all;
}

async function post(message, signal) {
  const response = await fetch(TOOLS_URL, {
    method: "POST",
    headers: headers({ "content-type": "application/json", accept: "application/json, text/event-stream" }),
    body: JSON.stringify(message),
    signal,
  });
  const given = response.headers.get("mcp-session-id");
  if (given) session = given;
  if (!response.ok) {
    const body = (await response.text().catch(() => "")).slice(0, 500);
    const why = body ? `: ${body}` : "";
    throw new Error(`the run's tool server answered ${response.status} to ${message.method}${why}`);
  }
  return response;
}

function parseEvent(data, id) {
  if (!data.length) return undefined;
  const message = JSON.parse(data.join("\n"));
  return message && message.id === id ? message : undefined;
}

// The answer to request `id`: a JSON body, or the matching `data:` event of an SSE stream.
async function answer(response, id) {
  const type = response.headers.get("content-type") ?? "";
  if (!type.includes("text/event-stream")) return await response.json();
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, end).replace(/\r$/, "");
        buffer = buffer.slice(end + 1);
        if (line.startsWith("data:")) {
          data.push(line.slice(5).replace(/^ /, ""));
        } else if (line === "") {
          const found = parseEvent(data, id);
          data = [];
          if (found) return found;
        }
      }
    }
    const found = parseEvent(data, id);
    if (found) return found;
  } finally {
    reader.cancel().catch(() => {});
  }
  throw new Error(`the run's tool server closed its stream without answering request ${id}`);
}

async function request(method, params, signal) {
  const id = ++lastId;
  const message = await answer(await post({ jsonrpc: "2.0", id, method, params }, signal), id);
  const error = message.error;
  if (error) throw new Error(`${method} failed: ${error.message ?? JSON.stringify(error)}`);
  return message.result;
}

function connect() {
  if (!opening) {
    const started = (async () => {
      const result = await request("initialize", {
        protocolVersion: OFFERED,
        capabilities: {},
        clientInfo: { name: "machine-pi", version: "1" },
      });
      protocol = result?.protocolVersion ?? OFFERED;
      const response = await post({ jsonrpc: "2.0", method: "notifications/initialized" });
      await response.body?.cancel();
    })();
    opening = started;
    started.catch(() => {
      if (opening === started) opening = undefined; // the next call tries again
    });
  }
  return opening;
}

// Ends the MCP session: an open client keeps `pi -p` from exiting.
async function close() {
  const ending = session;
  session = undefined;
  opening = undefined;
  if (!ending) return;
  try {
    const response = await fetch(TOOLS_URL, {
      method: "DELETE",
      headers: { ...headers({}), "mcp-session-id": ending },
      signal: AbortSignal.timeout(3000),
    });
    await response.body?.cancel();
  } catch {}
}

function text(result) {
  const parts = result?.content ?? [];
  return parts.map((part) => (part.type === "text" ? part.text : JSON.stringify(part))).join("\n");
}

// The request as machine's chat harness sends it: no system message without instructions, and no output
// cap on a route machine chose (Tinker, OpenRouter, --base-url): pi always sends one, which some refuse.
function payload(given) {
  if (!given || typeof given !== "object") return undefined;
  const changed = { ...given };
  const messages = changed.messages;
  const first = Array.isArray(messages) ? messages[0]?.role : undefined;
  const system = first === "system" || first === "developer";
  if (system && !CONFIG.instructions) changed.messages = messages.slice(1);
  if (CONFIG.uncapped) {
    delete changed.max_completion_tokens;
    delete changed.max_tokens;
  }
  return changed;
}

export default function (pi) {
  const declare = CONFIG.declare;
  if (declare && !getModel(declare.provider, declare.model.id)) {
    pi.registerProvider(declare.provider, { ...declare.config, models: [declare.model] });
  }
  for (const tool of CONFIG.tools) {
    pi.registerTool({
      name: tool.name,
      label: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      executionMode: "sequential",
      async execute(_toolCallId, params, signal) {
        await connect();
        const result = await request("tools/call", { name: tool.name, arguments: params ?? {} }, signal);
        if (result?.isError) throw new Error(text(result)); // pi gives the model an error result
        return { content: [{ type: "text", text: text(result) }], details: {} };
      },
    });
  }
  // Exactly the machine's instructions: pi would append the date and the working directory.
  const instructions = CONFIG.instructions;
  pi.on("before_agent_start", async () => (instructions ? { systemPrompt: instructions } : undefined));
  if (!instructions || CONFIG.uncapped) pi.on("before_provider_request", (event) => payload(event.payload));
  // After max_steps model turns machine stops pi; no further request may leave before it does.
  pi.on("context", async (event, ctx) => {
    const done = event.messages.filter(
      (m) => m.role === "assistant" && m.stopReason !== "error" && m.stopReason !== "aborted",
    ).length;
    if (done - CONFIG.historyTurns < CONFIG.maxSteps) return undefined;
    await new Promise((resolve) => ctx.signal?.addEventListener("abort", resolve, { once: true }));
    return undefined;
  });
  pi.on("session_shutdown", close);
}
