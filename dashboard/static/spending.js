// The spending log's newest entries and what they spent.

import { api, h, show, usd, when } from "./ui.js";

export async function spendingPage() {
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
