// The dashboard's page: a hash router over the JSON endpoints, kept live by the server's events.
// Everything a run holds (inputs, outputs, tool results, reasons) is model-written: it is only ever set
// as text, never as markup.

import { legend, lineChart, sparkline } from "./chart.js";

const view = document.getElementById("view");
let current = { onEvent: () => {} };

// ---- building blocks -------------------------------------------------------------------------------

function h(tag, attrs = {}, ...children) {
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

async function api(path) {
  const response = await fetch(path, { headers: { accept: "application/json" } });
  const body = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  if (!response.ok) throw new Error(body.error || `${response.status}`);
  return body;
}

const num = (value, digits) => (value === null || value === undefined ? "—" : value.toFixed(digits));
const score = (value) => num(value, 2);
const usd = (value) => `$${(value || 0).toFixed(4)}`;
const when = (text) => (text ? new Date(text).toISOString().replace("T", " ").slice(0, 19) + "Z" : "—");
const enc = encodeURIComponent;

function verdict(run) {
  if (run.status === "error") return h("span", { class: "error" }, "ERROR");
  if (!run.graded) return h("span", { class: "muted" }, "ungraded");
  if (run.score === null) return h("span", { class: "unscored" }, "UNSCORED");
  // passed is null when an UNSCORED criterion could still turn the run: neither a pass nor a fail
  if (run.passed === null) return h("span", { class: "unscored" }, `${score(run.score)} undecided`);
  return h("span", { class: run.passed ? "pass" : "fail" }, `${score(run.score)} ${run.passed ? "pass" : "fail"}`);
}

function show(...nodes) {
  view.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined && n !== false));
}

function failed(error) {
  show(h("p", { class: "error", testid: "error" }, String(error.message || error)));
}

function queryOf(hash) {
  const at = hash.indexOf("?");
  return new URLSearchParams(at < 0 ? "" : hash.slice(at + 1));
}

// ---- machines --------------------------------------------------------------------------------------

const REDRAW_MS = 3000;
const percent = (value) => (value === null || value === undefined ? "—" : `${Math.round(value * 100)}%`);

function worstCell(worst) {
  if (!worst) return h("span", { class: "muted" }, "—");
  const mean = worst.mean === null ? "" : `, mean ${score(worst.mean)}`;
  return h("span", {}, h("span", { class: "fail" }, worst.criterion), ` ${worst.fails} fail${worst.fails === 1 ? "" : "s"}${mean}`);
}

function healthCells(m) {
  const g = m.health;
  if (!g) return [h("td", { class: "muted", colspan: 6 }, "no runs yet")];
  const decided = g.passes + g.fails;
  return [
    h("td", { class: "num", testid: "mean" }, score(g.mean)),
    h("td", { class: "num", testid: "pass-rate" },
      h("span", { class: g.pass_rate === null ? "muted" : g.pass_rate < 1 ? "fail" : "pass" }, percent(g.pass_rate)),
      decided ? h("span", { class: "muted" }, ` ${g.passes}/${decided}`) : null),
    h("td", { class: "num", testid: "unscored" }, percent(g.unscored_share), g.unscored ? h("span", { class: "muted" }, ` (${g.unscored})`) : null),
    h("td", { testid: "trend" }, sparkline(g.trend, { testid: "spark" })),
    h("td", { class: "num", testid: "spent" }, usd(g.spent_usd)),
    h("td", { testid: "worst" }, worstCell(g.worst)),
  ];
}

async function machinesPage() {
  const machines = await api("/api/machines");
  const size = (machines.find((m) => m.health) || { health: { window: 200 } }).health.window;
  const rows = machines.map((m) =>
    h("tr", { "data-machine": m.name },
      h("td", {}, h("a", { href: `#/runs/${enc(m.name)}` }, m.name)),
      h("td", { testid: "live" }, m.live_version || "—"),
      h("td", { class: "num" }, m.runs),
      healthCells(m),
      h("td", {}, m.error ? h("span", { class: "error" }, m.error) : m.intent || ""),
      h("td", {}, h("a", { href: `#/machine/${enc(m.name)}` }, "quality & spend"), " · ",
        h("a", { href: `#/compare/${enc(m.name)}` }, "compare")),
    ),
  );
  const heads = ["machine", "live", "runs", "mean", "pass rate", "unscored", "trend", "spent", "failing most", "intent", ""];
  const numeric = new Set(["runs", "mean", "pass rate", "unscored", "spent"]);
  show(
    h("h1", {}, "Machines"),
    h("p", { class: "muted", testid: "window" },
      `Each machine over its newest ${size} runs, the one that needs attention first (lowest pass rate; no decided run last). ` +
      "A failed run counts 0 and as a fail; unscored: runs that finished with no score (ungraded, or nothing scored), " +
      `a share of all ${size} and kept out of the mean and pass rate; trend: the mean of each window of ${size} runs going back, oldest first; ` +
      "spent: what those runs cost; failing most: the criterion scored below the pass score most often."),
    h("table", { testid: "machines" },
      h("thead", {}, h("tr", {}, heads.map((t) => h("th", { class: numeric.has(t) ? "num" : undefined }, t)))),
      h("tbody", {}, rows)),
  );
  // a busy workspace tells of many runs a second: draw again at most every few seconds, while still here
  const here = current;
  let waiting = false;
  here.onEvent = (event) => {
    if (waiting || !["store", "run_finished", "graded"].includes(event.kind)) return;
    waiting = true;
    setTimeout(() => { if (current === here) machinesPage().catch(failed); }, REDRAW_MS);
  };
}

// ---- running now -----------------------------------------------------------------------------------

async function runningPage() {
  const list = h("div", { testid: "running" });
  const draw = (runs) => {
    if (runs.length === 0) {
      list.replaceChildren(h("p", { class: "muted" }, "nothing is running now"));
      return;
    }
    list.replaceChildren(...runs.map((r) =>
      h("div", { class: "card", testid: "running-run", "data-run": r.run },
        h("div", {}, h("strong", {}, r.machine), " ", h("span", { class: "muted" }, `${r.model} · ${r.case_id || "no case"} · started ${when(new Date(r.at * 1000).toISOString())}`)),
        h("div", { class: "muted" }, r.input || ""),
        (r.steps || []).map((s) => h("div", { class: "step" }, `${s.type}${s.tool ? ` ${s.tool}` : ""}${s.text ? `: ${s.text}` : ""}`)),
      )));
  };
  show(h("h1", {}, "Running now"), list);
  draw(await api("/api/running"));
  current.onEvent = async (event) => {
    if (["run_started", "step", "run_finished"].includes(event.kind)) draw(await api("/api/running"));
  };
}

// ---- the runs of a machine -------------------------------------------------------------------------

const OUTCOMES = ["", "pass", "fail", "unscored", "error", "ungraded"];
const TAGS = ["", "good", "bad", "correction"];
const FILTERS = ["case", "outcome", "min_score", "max_score", "model", "version", "tag", "suite", "since", "until"];

function select(name, values, chosen) {
  return h("select", { name }, values.map((v) => h("option", { value: v, selected: v === chosen }, v || "any")));
}

function filterForm(machine, query, choices) {
  const field = (label, control) => h("label", {}, label, control);
  const form = h("form", { class: "filters", testid: "filters" },
    field("case", select("case", ["", ...choices.cases], query.get("case") || "")),
    field("outcome", select("outcome", OUTCOMES, query.get("outcome") || "")),
    field("min score", h("input", { name: "min_score", type: "number", min: 0, max: 1, step: 0.05, value: query.get("min_score") || "" })),
    field("max score", h("input", { name: "max_score", type: "number", min: 0, max: 1, step: 0.05, value: query.get("max_score") || "" })),
    field("model", select("model", ["", ...choices.models], query.get("model") || "")),
    field("version", select("version", ["", ...choices.versions], query.get("version") || "")),
    field("tag", select("tag", TAGS, query.get("tag") || "")),
    field("suite", select("suite", ["", ...choices.suites.map((s) => s.id)], query.get("suite") || "")),
    field("since", h("input", { name: "since", type: "datetime-local", value: query.get("since") || "" })),
    field("until", h("input", { name: "until", type: "datetime-local", value: query.get("until") || "" })),
    h("button", { type: "submit" }, "filter"),
    h("a", { href: `#/runs/${enc(machine)}` }, "clear"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    for (const [key, value] of new FormData(form)) if (value) chosen.set(key, value);
    location.hash = `#/runs/${enc(machine)}${chosen.size ? `?${chosen}` : ""}`;
  });
  return form;
}

function runRow(run, fresh = false) {
  return h("tr", { testid: "run-row", "data-run": run.id, class: fresh ? "new" : undefined },
    h("td", {}, h("a", { href: `#/run/${enc(run.id)}` }, when(run.created_at))),
    h("td", {}, verdict(run)),
    h("td", {}, run.case_id || ""),
    h("td", {}, run.version || ""),
    h("td", {}, run.model),
    h("td", { class: "num" }, usd(run.cost_usd)),
    h("td", {}, (run.tags || []).join(" ")),
    h("td", { class: "muted" }, run.error || (run.failing.length ? `below full marks: ${run.failing.join(", ")}` : run.input_preview)),
  );
}

async function runsPage(machine, query) {
  const params = new URLSearchParams({ machine });
  for (const key of FILTERS) if (query.get(key)) params.set(key, key === "since" || key === "until" ? new Date(query.get(key)).toISOString() : query.get(key));
  const [first, info] = await Promise.all([api(`/api/runs?${params}`), api(`/api/machines/${enc(machine)}/trend`)]);
  const body = h("tbody", {});
  const shown = new Set();
  let cursor = first.next;
  const add = (runs, fresh = false, atTop = false) => {
    const rows = runs.filter((r) => !shown.has(r.id)).map((r) => (shown.add(r.id), runRow(r, fresh)));
    if (atTop) body.prepend(...rows); else body.append(...rows);
  };
  add(first.runs);
  const more = h("button", { testid: "more", onclick: async () => {
    const page = await api(`/api/runs?${params}&cursor=${enc(cursor)}`);
    add(page.runs);
    cursor = page.next;
    more.hidden = !cursor;
    note.textContent = page.window_full && page.runs.length === 0 ? "no match in the runs read so far: more searches further back" : "";
  } }, "more");
  more.hidden = !cursor;
  const note = h("p", { class: "muted" }, first.window_full && first.runs.length === 0 ? "no match in the newest runs: more searches further back" : "");
  show(
    h("h1", {}, `Runs of ${machine}`),
    h("p", {}, h("a", { href: `#/machine/${enc(machine)}` }, "quality & spend"), " · ", h("a", { href: `#/compare/${enc(machine)}` }, "compare")),
    filterForm(machine, query, info.choices),
    h("table", { testid: "runs" },
      h("thead", {}, h("tr", {}, ["started", "score", "case", "version", "model", "cost", "tags", "input, or why it failed"].map((t) => h("th", {}, t)))),
      body),
    note, more,
  );
  current.onEvent = async (event) => {
    if (event.kind === "store" || (event.kind === "run_finished" && event.machine === machine)) {
      const page = await api(`/api/runs?${params}`);
      add(page.runs, true, true);
    }
  };
}

// ---- one run ---------------------------------------------------------------------------------------

function message(m) {
  const parts = [h("div", { class: "role" }, m.role + (m.name ? ` · ${m.name}` : "") + (m.is_error ? " · error" : ""))];
  if (m.reasoning) parts.push(h("details", {}, h("summary", {}, "reasoning"), h("pre", {}, m.reasoning)));
  if (m.content) parts.push(h("pre", {}, m.content));
  for (const call of m.tool_calls || []) {
    parts.push(h("div", { testid: "tool-call" }, h("strong", {}, `calls ${call.name}`), h("pre", {}, call.arguments ? JSON.stringify(call.arguments, null, 2) : call.raw_arguments || "")));
  }
  return h("div", { class: `message ${m.role}` }, parts);
}

async function runPage(id) {
  const run = await api(`/api/runs/${enc(id)}`);
  const card = run.scorecard;
  const seconds = run.timings && run.timings.finished_at ? (new Date(run.timings.finished_at) - new Date(run.timings.started_at)) / 1000 : null;
  const facts = [
    ["machine", h("a", { href: `#/runs/${enc(run.machine)}` }, run.machine)],
    ["version", run.version || "—"], ["model", run.model], ["harness", run.harness],
    ["status", run.status], ["case", run.case_id ? `${run.case_id}${run.trial !== null ? ` (trial ${run.trial})` : ""}` : "—"],
    ["suite", run.suite_id || "—"], ["started", when(run.timings && run.timings.started_at)],
    ["took", seconds === null ? "—" : `${seconds.toFixed(2)} s`], ["cost", usd(run.cost_usd)],
    ["tokens", `${run.usage.input_tokens} in (${run.usage.cached_input_tokens} cached), ${run.usage.output_tokens} out`],
    ["tags", (run.tags || []).map((t) => `${t.kind}${t.note ? `: ${t.note}` : ""}`).join("; ") || "—"],
  ];
  const criteria = card ? Object.values(card.criteria) : [];
  show(
    h("h1", {}, `Run ${run.id}`),
    h("div", { class: "card grid", testid: "run-facts" }, facts.flatMap(([k, v]) => [h("span", { class: "muted" }, k), h("span", {}, v)])),
    run.error ? h("p", { class: "error", testid: "run-error" }, run.error) : null,
    h("h2", {}, "Scorecard"),
    card
      ? h("div", {},
          h("p", { class: "summary" }, "score ", verdict({ ...run, graded: true, score: card.score, passed: card.passed }), ` (pass score ${card.pass_score})`),
          h("table", { testid: "scorecard" },
            h("thead", {}, h("tr", {}, ["criterion", "weight", "score", "grader", "reason"].map((t) => h("th", {}, t)))),
            h("tbody", {}, criteria.map((c) => h("tr", {},
              h("td", {}, c.criterion), h("td", { class: "num" }, c.weight),
              h("td", { class: "num" }, c.score === null ? h("span", { class: "unscored" }, "UNSCORED") : score(c.score)),
              h("td", {}, c.grader), h("td", { testid: "reason" }, c.reason))))))
      : h("p", { class: "muted" }, "not graded"),
    h("h2", {}, "Input"), h("pre", { testid: "run-input" }, run.input),
    h("h2", {}, "Steps"), h("div", { testid: "trajectory" }, (run.trajectory || []).map(message)),
    h("h2", {}, "Output"), h("pre", { testid: "run-output" }, run.output || ""),
  );
}

// ---- quality and spend over time -------------------------------------------------------------------

function buckets(points, count = 40) {
  if (points.length === 0) return [];
  const times = points.map((p) => new Date(p.at).getTime());
  const lo = Math.min(...times), hi = Math.max(...times), width = Math.max(1, (hi - lo) / count);
  const out = new Map();
  points.forEach((p, i) => {
    const key = Math.min(count - 1, Math.floor((times[i] - lo) / width));
    const b = out.get(key) || { at: lo + key * width, scores: [], cost: 0, runs: 0 };
    if (p.status === "error") b.scores.push(0); else if (p.score !== null) b.scores.push(p.score);
    b.cost += p.cost_usd; b.runs += 1;
    out.set(key, b);
  });
  return [...out.values()].sort((a, b) => a.at - b.at);
}

async function machinePage(machine) {
  const data = await api(`/api/machines/${enc(machine)}/trend`);
  const bins = buckets(data.points);
  const day = (x) => new Date(x).toISOString().slice(5, 16).replace("T", " ");
  const quality = bins.map((b) => [b.at, b.scores.length ? b.scores.reduce((a, c) => a + c, 0) / b.scores.length : null]);
  const spend = bins.map((b) => [b.at, b.cost]);
  const scored = data.points.filter((p) => p.score !== null);
  const mean = scored.length ? scored.reduce((a, p) => a + p.score, 0) / scored.length : null;
  const total = data.points.reduce((a, p) => a + p.cost_usd, 0);
  show(
    h("h1", {}, `${machine}: quality and spend`),
    h("p", { class: "summary", testid: "trend-summary" }, `${data.points.length} newest runs: mean score ${score(mean)}, spent ${usd(total)}`),
    h("h2", {}, "Mean score over time"),
    lineChart([{ name: "mean score", color: "#2b59c3", points: quality }], { yMin: 0, yMax: 1, xLabel: day, testid: "quality-chart" }),
    h("h2", {}, "Spend over time (USD per interval)"),
    lineChart([{ name: "spend", color: "#9a6700", points: spend }], { yMin: 0, xLabel: day, testid: "spend-chart" }),
    h("p", {}, h("a", { href: `#/runs/${enc(machine)}` }, "runs"), " · ", h("a", { href: `#/compare/${enc(machine)}` }, "compare two versions or suites")),
  );
}

// ---- comparison ------------------------------------------------------------------------------------

async function comparePage(machine, query) {
  const info = await api(`/api/machines/${enc(machine)}/trend`);
  const by = query.get("by") || "version";
  const options = by === "version" ? info.choices.versions : info.choices.suites.map((s) => s.id);
  const a = query.get("a") || options[0] || "", b = query.get("b") || options[1] || options[0] || "";
  const form = h("form", { class: "filters", testid: "compare-form" },
    h("label", {}, "by", select("by", ["version", "suite"], by)),
    h("label", {}, "a", select("a", options, a)), h("label", {}, "b", select("b", options, b)),
    h("button", { type: "submit" }, "compare"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams(new FormData(form));
    if (chosen.get("by") !== by) { chosen.delete("a"); chosen.delete("b"); }
    location.hash = `#/compare/${enc(machine)}?${chosen}`;
  });
  const parts = [h("h1", {}, `${machine}: ${by} against ${by}`), form];
  if (a && b) {
    const c = await api(`/api/compare?${new URLSearchParams({ machine, by, a, b })}`);
    const signed = (d) => (d === null ? "—" : `${d > 0 ? "+" : ""}${d.toFixed(3)}`);
    const z = c.z === null ? "z —" : `z ${c.z.toFixed(2)}`;
    parts.push(
      h("p", { class: "summary", testid: "paired" },
        `${b} − ${a}: ${signed(c.diff)} (standard error ${c.se.toFixed(3)}, ${z}) over ${c.compared} cases; ${c.up} up, ${c.down} down` +
        (c.p_value === null ? "" : `, sign test p ${c.p_value.toPrecision(3)}`)),
      h("h2", {}, "Cases that moved most"),
      h("ul", { testid: "moved" }, c.moved.map((m) => h("li", {}, `${m.case_id}: ${score(m.a)} → ${score(m.b)} (${signed(m.diff)})`))),
      h("h2", {}, "Every case"),
      h("table", { testid: "compare" },
        h("thead", {}, h("tr", {}, ["case", `${a} mean`, "runs", `${b} mean`, "runs", "difference"].map((t) => h("th", {}, t)))),
        h("tbody", {}, c.cases.map((row) => h("tr", { "data-case": row.case_id },
          h("td", {}, row.case_id), h("td", { class: "num" }, score(row.a)), h("td", { class: "num" }, row.a_runs),
          h("td", { class: "num" }, score(row.b)), h("td", { class: "num" }, row.b_runs),
          h("td", { class: `num ${row.diff > 0 ? "pass" : row.diff < 0 ? "fail" : ""}` }, signed(row.diff)))))),
    );
  } else {
    parts.push(h("p", { class: "muted" }, `no ${by}s with runs to compare yet`));
  }
  show(...parts);
}

// ---- training --------------------------------------------------------------------------------------

async function trainingsPage() {
  const rows = await api("/api/training");
  show(
    h("h1", {}, "Training records"),
    rows.length === 0 ? h("p", { class: "muted" }, "no training records yet") :
    h("table", { testid: "trainings" },
      h("thead", {}, h("tr", {}, ["record", "machine", "trainer", "steps", "outcome"].map((t) => h("th", {}, t)))),
      h("tbody", {}, rows.map((r) => h("tr", {},
        h("td", {}, h("a", { href: `#/training/${enc(r.id)}` }, r.id)), h("td", {}, r.machine),
        h("td", {}, `${r.trainer} on ${r.base_model}`), h("td", { class: "num" }, `${r.steps}${r.planned_steps ? `/${r.planned_steps}` : ""}`),
        h("td", {}, r.outcome))))),
  );
}

function rlCells(step) {
  if (!step) return ["—", "—", "—", "—"];
  return [num(step.reward, 3), percent(step.flat_share), num(step.kl, 4), num(step.entropy, 3)];
}

async function trainingPage(id) {
  const t = await api(`/api/training/${enc(id)}`);
  const r = t.record, s = r.settings, plan = r.plan;
  const losses = t.steps.map((step) => [step.step, step.loss]);
  const rl = r.rl, rewarded = t.steps.filter((step) => step.rl);
  const rewards = rewarded.map((step) => [step.step, step.rl.reward]);
  const criteria = [...new Set(rewarded.flatMap((step) => Object.keys(step.rl.criteria || {})))];
  const colors = ["#6750a4", "#7d5260", "#386a20", "#8c4a00", "#00639b"];
  const rewardSeries = [{ name: "reward", color: "#0b57d0", points: rewards },
    ...criteria.slice(0, colors.length).map((name, i) => ({ name, color: colors[i], points: rewarded.map((step) => [step.step, step.rl.criteria[name] ?? null]) }))];
  const facts = [
    ["machine", r.machine], ["trainer", `${r.trainer} on ${r.base_model}`], ["status", `${r.status}, ${r.steps} steps`],
    ["outcome", t.outcome], ["method", s.method],
    ["learning rate", `${plan ? plan.learning_rate : s.learning_rate ?? t.steps[0]?.learning_rate ?? "trainer's default"} (${s.lr_schedule})`],
    ...(rl ? [] : [["epochs × batch", `${s.epochs} × ${s.batch_size}`]]), ["LoRA rank", s.rank ?? "trainer's default"],
    ...(rl ? [] : [
      ["data", plan ? `${plan.examples} examples, ${plan.sequences} sequences, ${plan.tokens} tokens (${plan.target_tokens} targets)` : "—"],
      ["sources", Object.entries(r.selection.sources || {}).map(([k, v]) => `${k}: ${v}`).join("; ") || "—"]]),
    ["datasets", (r.datasets || []).map((d) => `${d.path} sha256 ${d.sha256.slice(0, 12)} (${d.rows} rows)`).join("; ") || "—"],
    ...(rl ? [["RL", `groups of ${rl.group} of ${rl.cases_per_step} cases a step, ${rl.rl_steps} steps, ${rl.loss}, temperature ${rl.temperature}, at most ${rl.max_tokens} tokens a reply`],
      ["samples", `${r.sampled} runs, marked as this training's`]] : []),
    ["gate", r.gate ? `${r.gate.file} sha256 ${r.gate.sha256.slice(0, 12)}, ${r.gate.trials} trial${r.gate.trials === 1 ? "" : "s"}, min z ${r.gate.min_z}` : "—"],
  ];
  show(
    h("h1", {}, `Training ${r.id}`),
    h("div", { class: "card grid", testid: "training-facts" }, facts.flatMap(([k, v]) => [h("span", { class: "muted" }, k), h("span", {}, v)])),
    ...(rewarded.length || rl ? [h("h2", {}, "Reward per step"),
      lineChart(rewardSeries, { yMin: 0, yMax: 1, xLabel: (x) => x.toFixed(0), testid: "reward-chart" }), legend(rewardSeries)] : []),
    h("h2", {}, "Loss per step"),
    lineChart([{ name: "loss", color: "#b3261e", points: losses }], { xLabel: (x) => x.toFixed(0), testid: "loss-chart" }),
    ...(rl ? [] : [h("p", { class: "muted" }, `loss by epoch: ${t.epoch_losses.map((l) => l.toFixed(4)).join(" → ") || "—"}`)]),
    h("h2", {}, "Checkpoints"),
    h("ul", { testid: "checkpoints" }, t.checkpoints.map((c) => h("li", {}, `step ${c.step}: ${c.model}`))),
    h("details", {}, h("summary", {}, `every step (${t.steps.length})`),
      h("table", {}, h("thead", {}, h("tr", {}, ["step", "epoch", "loss", ...(rl ? ["reward", "flat groups", "KL", "entropy"] : []), "tokens", "lr", "seconds"].map((x) => h("th", {}, x)))),
        h("tbody", {}, t.steps.map((st) => h("tr", {}, [st.step, st.epoch, num(st.loss, 4), ...(rl ? rlCells(st.rl) : []), st.tokens, st.learning_rate, st.seconds.toFixed(2)].map((v) => h("td", { class: "num" }, v))))))),
  );
  current.onEvent = async (event) => {
    if ((event.kind === "training_step" || event.kind === "checkpoint") && event.record === id) await trainingPage(id);
  };
}

// ---- spending --------------------------------------------------------------------------------------

async function spendingPage() {
  const log = await api("/api/spending");
  show(
    h("h1", {}, "Spending"),
    h("p", { class: "summary", testid: "spent-total" }, `${log.entries.length} newest entries, ${usd(log.total_usd)} spent`),
    h("table", { testid: "spending" },
      h("thead", {}, h("tr", {}, ["when", "machine", "operation", "spent", "budget", "consent"].map((t) => h("th", {}, t)))),
      h("tbody", {}, log.entries.map((e) => h("tr", {},
        h("td", {}, when(e.at)), h("td", {}, e.machine || ""), h("td", {}, e.tool || ""),
        h("td", { class: "num" }, usd(e.spent_usd)), h("td", { class: "num" }, e.budget_usd === null ? "none" : usd(e.budget_usd)),
        h("td", { class: "muted" }, e.consent ? `${e.consent.how}: ${e.consent.detail}` : ""))))),
  );
}

// ---- routing and live events -----------------------------------------------------------------------

async function route() {
  current = { onEvent: () => {} };
  const hash = location.hash || "#/";
  const path = hash.split("?")[0].slice(1);
  const query = queryOf(hash);
  const [, page, ...rest] = path.split("/");
  const arg = decodeURIComponent(rest.join("/"));
  try {
    if (!page) await machinesPage();
    else if (page === "running") await runningPage();
    else if (page === "runs") await runsPage(arg, query);
    else if (page === "run") await runPage(arg);
    else if (page === "machine") await machinePage(arg);
    else if (page === "compare") await comparePage(arg, query);
    else if (page === "training" && arg) await trainingPage(arg);
    else if (page === "training") await trainingsPage();
    else if (page === "spending") await spendingPage();
    else show(h("p", {}, "no such page: "), h("a", { href: "#/" }, "machines"));
  } catch (error) {
    failed(error);
  }
  document.body.dataset.ready = hash;
}

// A stream the dashboard refuses (503: it serves a bounded number at once) is not retried by the
// browser itself: try again after the Retry-After it sends.
const RETRY_MS = 5000;

function listen() {
  const live = document.getElementById("live");
  const source = new EventSource("/api/events");
  source.onopen = () => { live.textContent = "live"; live.classList.add("on"); };
  source.onerror = () => {
    live.textContent = "reconnecting…";
    live.classList.remove("on");
    if (source.readyState === EventSource.CLOSED) setTimeout(listen, RETRY_MS);
  };
  for (const kind of ["run_started", "step", "run_finished", "graded", "training_step", "checkpoint", "store"]) {
    source.addEventListener(kind, (message) => {
      const event = JSON.parse(message.data);
      Promise.resolve(current.onEvent(event)).catch(() => {});
    });
  }
}

window.addEventListener("hashchange", route);
listen();
route();
