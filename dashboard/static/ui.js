// The pages' building blocks: elements made with every model-written value set as text, the JSON
// endpoints, the formats numbers and times are shown in, and which page is current (its onEvent hears
// the server's events).

const view = document.getElementById("view");

// The page drawn now; a page sets state.current.onEvent to hear the server's events while it is current,
// and state.current.onKey to hear the keys pressed outside a text field.
export const state = { current: { onEvent: () => {}, onKey: () => {} } };

export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "testid") node.dataset.testid = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export async function api(path) {
  const response = await fetch(path, { headers: { accept: "application/json" } });
  const body = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  if (!response.ok) throw new Error(body.error || `${response.status}`);
  return body;
}

// A change (a mark) is a POST of JSON carrying this page's CSRF token, which the server made for this very
// page: a page elsewhere has none, and its requests carry another Origin, refused too.
export async function post(path, body) {
  const csrf = document.querySelector('meta[name="machine-csrf"]').content;
  const response = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", "x-machine-csrf": csrf },
    body: JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  if (!response.ok) throw new Error(answer.error || `${response.status}`);
  return answer;
}

export const num = (value, digits) => (value === null || value === undefined ? "—" : value.toFixed(digits));
export const score = (value) => num(value, 2);
export const usd = (value) => `$${(value || 0).toFixed(4)}`;
export const when = (text) => (text ? new Date(text).toISOString().replace("T", " ").slice(0, 19) + "Z" : "—");
export const enc = encodeURIComponent;

export function verdict(run) {
  if (run.status === "error") return h("span", { class: "error" }, "ERROR");
  if (!run.graded) return h("span", { class: "muted" }, "ungraded");
  if (run.score === null) return h("span", { class: "unscored" }, "UNSCORED");
  // passed is null when an UNSCORED criterion could still turn the run: neither a pass nor a fail
  if (run.passed === null) return h("span", { class: "unscored" }, `${score(run.score)} undecided`);
  return h("span", { class: run.passed ? "pass" : "fail" }, `${score(run.score)} ${run.passed ? "pass" : "fail"}`);
}

export function show(...nodes) {
  view.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined && n !== false));
}

export function failed(error) {
  show(h("p", { class: "error", testid: "error" }, String(error.message || error)));
}

export function queryOf(hash) {
  const at = hash.indexOf("?");
  return new URLSearchParams(at < 0 ? "" : hash.slice(at + 1));
}

export const percent = (value) => (value === null || value === undefined ? "—" : `${Math.round(value * 100)}%`);

export function select(name, values, chosen) {
  return h("select", { name }, values.map((v) => h("option", { value: v, selected: v === chosen }, v || "any")));
}
