// Small SVG charts drawn from the JSON endpoints: a line chart of one or more series over x, with axes,
// and a sparkline for a table cell.
// Every label is set as text (never parsed as markup).

const SVG = "http://www.w3.org/2000/svg";

function el(name, attrs = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function ticks(lo, hi, count = 4) {
  if (hi === lo) return [lo];
  const out = [];
  for (let i = 0; i <= count; i++) out.push(lo + ((hi - lo) * i) / count);
  return out;
}

function fmt(value) {
  if (Math.abs(value) >= 100) return value.toFixed(0);
  if (Math.abs(value) >= 1) return value.toFixed(2);
  return value.toPrecision(2);
}

// series: [{name, color, points: [[x, y], ...]}]; options: {yMin, yMax, xLabel(x), testid}
export function lineChart(series, options = {}) {
  const width = 800, height = 220, left = 52, right = 12, top = 12, bottom = 28;
  const svg = el("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img" });
  if (options.testid) svg.dataset.testid = options.testid;
  const all = series.flatMap((s) => s.points.filter((p) => p[1] !== null && Number.isFinite(p[1])));
  if (all.length === 0) {
    svg.append(el("text", { x: width / 2, y: height / 2, "text-anchor": "middle" }, "nothing to draw yet"));
    return svg;
  }
  const xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
  const xMin = Math.min(...xs), xMax = Math.max(...xs);
  const yMin = options.yMin ?? Math.min(...ys), yMax = options.yMax ?? Math.max(...ys);
  const sx = (x) => left + (xMax === xMin ? 0.5 : (x - xMin) / (xMax - xMin)) * (width - left - right);
  const sy = (y) => top + (1 - (yMax === yMin ? 0.5 : (y - yMin) / (yMax - yMin))) * (height - top - bottom);
  for (const y of ticks(yMin, yMax)) {
    svg.append(el("line", { x1: left, x2: width - right, y1: sy(y), y2: sy(y), stroke: "#eef0f3" }));
    svg.append(el("text", { x: left - 6, y: sy(y) + 4, "text-anchor": "end" }, fmt(y)));
  }
  const label = options.xLabel ?? fmt;
  for (const x of ticks(xMin, xMax, Math.min(5, Math.max(1, new Set(xs).size - 1)))) {
    svg.append(el("text", { x: sx(x), y: height - 8, "text-anchor": "middle" }, label(x)));
  }
  for (const s of series) {
    const shown = s.points.filter((p) => p[1] !== null && Number.isFinite(p[1]));
    if (shown.length === 0) continue;
    const d = shown.map((p, i) => `${i ? "L" : "M"}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join("");
    const path = el("path", { d, fill: "none", stroke: s.color, "stroke-width": 2 });
    path.dataset.series = s.name;
    path.dataset.points = String(shown.length);
    svg.append(path);
    if (shown.length <= 60) {
      for (const p of shown) svg.append(el("circle", { cx: sx(p[0]), cy: sy(p[1]), r: 2.5, fill: s.color }));
    }
  }
  return svg;
}

export function legend(series) {
  const span = document.createElement("p");
  span.className = "legend";
  span.textContent = series.map((s) => `${s.name} (${s.color})`).join(" · ");
  return span;
}

// A tiny inline line of values in their order (a null is a gap), for a table cell: at most `max` of the
// last values, on a fixed scale (0 to 1 unless told), its values said in its title as text.
export function sparkline(values, options = {}) {
  const width = 84, height = 22, pad = 3;
  const svg = el("svg", { viewBox: `0 0 ${width} ${height}`, width, height, class: "spark", role: "img" });
  if (options.testid) svg.dataset.testid = options.testid;
  const kept = values.slice(-(options.max ?? 24));
  const lo = options.yMin ?? 0, hi = options.yMax ?? 1;
  const sx = (i) => pad + (kept.length < 2 ? 0.5 : i / (kept.length - 1)) * (width - 2 * pad);
  const sy = (y) => pad + (1 - (Math.min(hi, Math.max(lo, y)) - lo) / (hi - lo || 1)) * (height - 2 * pad);
  const shown = kept.map((y, i) => [i, y]).filter(([, y]) => y !== null && Number.isFinite(y));
  svg.append(el("title", {}, kept.map((y) => (y === null || !Number.isFinite(y) ? "—" : y.toFixed(2))).join(" → ")));
  svg.dataset.points = String(shown.length);
  if (shown.length === 0) return svg;
  const d = shown.map(([i, y], n) => `${n ? "L" : "M"}${sx(i).toFixed(1)},${sy(y).toFixed(1)}`).join("");
  svg.append(el("path", { d, fill: "none", stroke: options.color ?? "#2b59c3", "stroke-width": 1.5 }));
  const [li, ly] = shown[shown.length - 1];
  svg.append(el("circle", { cx: sx(li), cy: sy(ly), r: 2, fill: options.color ?? "#2b59c3" }));
  return svg;
}
