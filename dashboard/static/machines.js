// The machines page: how each machine does over its newest runs, the one that needs attention first.

import { sparkline } from "./chart.js";
import { api, enc, failed, h, percent, score, show, state, usd } from "./ui.js";

const REDRAW_MS = 3000;
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

export async function machinesPage() {
  const machines = await api("/api/machines");
  const size = (machines.find((m) => m.health) || { health: { window: 200 } }).health.window;
  const rows = machines.map((m) =>
    h("tr", { "data-machine": m.name },
      h("td", {}, h("a", { href: `#/runs/${enc(m.name)}` }, m.name)),
      h("td", { testid: "live" }, m.live_version || "—"),
      h("td", { class: "num" }, m.runs),
      healthCells(m),
      h("td", {}, m.error ? h("span", { class: "error" }, m.error) : m.intent || ""),
      h("td", {}, h("a", { href: `#/review/${enc(m.name)}` }, "review"), " · ",
        h("a", { href: `#/machine/${enc(m.name)}` }, "quality & spend"), " · ",
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
  const here = state.current;
  let waiting = false;
  here.onEvent = (event) => {
    if (waiting || !["store", "run_finished", "graded"].includes(event.kind)) return;
    waiting = true;
    setTimeout(() => { if (state.current === here) machinesPage().catch(failed); }, REDRAW_MS);
  };
}
