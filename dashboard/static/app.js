// The dashboard's page: a hash router over the pages' modules, kept live by the server's events.
// Everything a run holds (inputs, outputs, tool results, reasons) is model-written: it is only ever set
// as text, never as markup (ui.js's h).

import { machinesPage } from "./machines.js";
import { comparePage, machinePage } from "./quality.js";
import { pairPage } from "./pair.js";
import { reviewPage } from "./review.js";
import { runPage } from "./run.js";
import { runningPage, runsPage } from "./runs.js";
import { spendingPage } from "./spending.js";
import { trainingPage, trainingsPage } from "./training.js";
import { failed, h, queryOf, show, state } from "./ui.js";

async function route() {
  state.current = { onEvent: () => {}, onKey: () => {} };
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
    else if (page === "pair") await pairPage(query);
    else if (page === "review") await reviewPage(arg, query);
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
      Promise.resolve(state.current.onEvent(event)).catch(() => {});
    });
  }
}

// One key per decision on the pages that take keys (the review queue); never while typing in a field.
document.addEventListener("keydown", (event) => {
  const typing = event.target.closest && event.target.closest("input, textarea, select");
  if (typing || event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
  state.current.onKey(event);
});

window.addEventListener("hashchange", route);
listen();
route();
