// embedlab projector: the page's behaviour (report/projector.py writes the page around it).
//
// Reads one JSON block (#embedlab-data), draws its Plotly figure, and wires up hover
// (Plotly's, from each point's text and id), search (rings and zooms to matching tokens),
// click (the selected token's nearest tokens by cosine and by dot, measured by embedlab
// over the whole table and listed from the data), and colouring (neighbour group or
// row length). It computes no measurement: every number shown is in the data.
// Tokens reach the page through textContent only; Plotly's hover labels and SVG traces' labels get them with
// < > & written as entities, since Plotly reads a little HTML there (its WebGL traces draw text as it is).
(function () {
  "use strict";
  document.body.dataset.scriptMs = performance.now().toFixed(0);  // plotly.js parsed: the rest is this page's
  const data = JSON.parse(document.getElementById("embedlab-data").textContent);
  const words = data.words;
  const colors = data.colors;
  const fig = data.figure;
  const ids = data.rows.ids;                                   // (n,) token ids of the points
  const n = ids.length;
  const rowOf = new Map(ids.map((id, i) => [id, i]));          // token id -> point
  const namedAt = new Map(data.named.ids.map((id, j) => [id, j]));
  const coords = ["x", "y", "z"].slice(0, data.dims).map((axis) => fig.data[0][axis]);
  const plot = document.getElementById("plot");
  const MATCHES_LISTED = 12;
  const camera = JSON.stringify(fig.layout.scene ? fig.layout.scene.camera : null);  // Plotly updates the layout it draws

  let selected = null;   // the selected point (index into ids), or null
  let overlay = [];      // the points drawn again on top, labelled: the selected one and its neighbours
  let colourBy = "group";
  let drawn = false;     // before the first draw, updates go into the figure: one draw, not three

  // Plotly.restyle once the plot is drawn; before, the same update written into the figure.
  function restyle(update, trace) {
    if (drawn) {
      Plotly.restyle(plot, update, [trace]);
      return;
    }
    for (const [path, [value]] of Object.entries(update)) {
      const keys = path.split(".");
      let target = fig.data[trace];
      for (const key of keys.slice(0, -1)) target = target[key] = target[key] || {};
      target[keys[keys.length - 1]] = value;
    }
  }

  // A token as the page shows it: its spaces, tabs and newlines as signs (report/formats.py's
  // visible_whitespace), so a token that is a space is a label, not nothing; null without vocabulary.
  function tokenOf(id) {
    const t = data.named.labels[namedAt.get(id)];
    return t === null || t === undefined ? null : t;
  }
  function shown(id) {
    const t = tokenOf(id);
    return t === null ? "id " + id : t;
  }
  // A point's hover label (Plotly text): its token, then its id (the id alone without vocabulary).
  function hoverText(id) {
    const t = tokenOf(id);
    return t === null ? "id " + id : "<b>" + plotlyText(t) + "</b><br>id " + id;
  }
  function plotlyText(text) {
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }
  // A label as trace `trace` draws it: an SVG trace ("scatter") reads a little HTML in its text, so < > & go
  // as entities; a WebGL trace draws entities as they are ("&lt;pad&gt;"), so its label goes as it is, except
  // that scatter3d still reads <b>, <i>, <sub>, <sup> and <br>: a word joiner (U+2060, drawn as nothing) after
  // their "<" keeps a token such as "<b>x</b>" from turning bold.
  function labelText(trace, text) {
    const type = fig.data[trace].type;
    if (type === "scatter") return plotlyText(text);
    return type === "scatter3d" ? text.replace(/<(?=\/?(?:b|i|sub|sup|br)\b)/gi, "<\u2060") : text;
  }
  function number(x) {
    return String(Number(x.toPrecision(4)));
  }
  // A column of numbers with one number of decimals: 4 significant digits of its largest magnitude (the data
  // holds 4), so that 0.8123 and 0.05 read 0.812 and 0.050 in one column, not 0.8123 and 0.05.
  function columnText(values) {
    const top = Math.max(...values.map((v) => Math.abs(v)));
    const places = top > 0 && isFinite(top) ? Math.min(6, Math.max(0, 3 - Math.floor(Math.log10(top)))) : 3;
    return values.map((v) => { const t = v.toFixed(places); return Number(t) === 0 ? (0).toFixed(places) : t; });
  }
  function tokenElement(id) {
    const el = document.createElement("bdi");
    el.className = tokenOf(id) === null ? "token none" : "token";
    el.textContent = tokenOf(id) === null ? "—" : tokenOf(id);
    return el;
  }
  function cell(content, className) {
    const td = document.createElement("td");
    if (className) td.className = className;
    if (typeof content === "string") td.textContent = content; else td.appendChild(content);
    return td;
  }

  // -- colours ---------------------------------------------------------------------

  // id -> "cosine" | "dot" | "both": the selected point's neighbours.
  function neighbourGroups(i) {
    const groups = new Map();
    for (const id of data.neighbors.cosine.ids[i]) groups.set(id, "cosine");
    for (const id of data.neighbors.dot.ids[i]) groups.set(id, groups.get(id) === "cosine" ? "both" : "dot");
    return groups;
  }

  // Each point's group: relative to the selected point, else "chosen" (a token given) or "other".
  function pointGroups() {
    const fallback = data.rows.groups.map((g) => (g === "chosen" ? "chosen" : "other"));
    if (selected === null) return fallback;
    const groups = neighbourGroups(selected);
    const own = ids[selected];
    return ids.map((id, i) => (id === own ? "selected" : groups.get(id) || fallback[i]));
  }

  const normRange = range(data.rows.norms, data.rows.norms.keys());

  // Trace 0 by group or by length; the selection's own markers (trace 1) likewise, on the same scale.
  function recolour() {
    const groups = pointGroups();
    const scale = {"marker.colorscale": ["Viridis"], "marker.cmin": [normRange[0]], "marker.cmax": [normRange[1]]};
    if (colourBy === "norm") {
      restyle({"marker.color": [data.rows.norms], "marker.showscale": [true], ...scale,
               "marker.colorbar": [{title: {text: words.color_norm}, thickness: 12}]}, 0);
      restyle({"marker.color": [overlay.map((r) => data.rows.norms[r])], ...scale}, 1);
    } else {
      restyle({"marker.color": [groups.map((g) => colors[g])], "marker.showscale": [false]}, 0);
      restyle({"marker.color": [overlay.map((r) => colors[groups[r]])]}, 1);
    }
    drawLegend();
  }

  function drawLegend() {
    const legend = document.getElementById("legend");
    legend.hidden = colourBy !== "group";
    const present = new Set(pointGroups());
    const keys = ["selected", "cosine", "dot", "both", "chosen", "other"].filter((key) => present.has(key));
    legend.replaceChildren(...keys.map((key) => {
      const li = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = colors[key];
      li.append(swatch, document.createTextNode(words.legend[key]));
      return li;
    }));
  }

  // -- selection: a point and its nearest tokens -------------------------------------

  function select(i) {
    selected = i;
    const groups = neighbourGroups(i);
    const rows = [i];
    for (const id of groups.keys()) if (rowOf.has(id)) rows.push(rowOf.get(id));
    overlay = rows;
    const update = {
      text: [overlayLabels()],
      hovertext: [rows.map((r) => hoverText(ids[r]))],
      customdata: [rows.map((r) => ids[r])],
    };
    ["x", "y", "z"].slice(0, data.dims).forEach((axis, c) => { update[axis] = [rows.map((r) => coords[c][r])]; });
    restyle(update, 1);
    if (ringed.length) restyle({text: [ringLabels()]}, 2);  // a match now in the selection loses its ring label
    if (LABEL_ALL) restyle({text: [pointLabels()]}, 0);     // and a point in it loses its own
    recolour();
    drawSelection();
  }

  function drawSelection() {
    const box = document.getElementById("selected-token");
    for (const table of document.querySelectorAll("table.neighbours, h3.list-title")) table.hidden = selected === null;
    document.getElementById("absent-hint").hidden = true;
    if (selected === null) {
      box.textContent = words.click_hint;
      return;
    }
    const id = ids[selected];
    box.replaceChildren(tokenElement(id),
      document.createTextNode(" · id " + id + " · " + words.length + " " + number(data.rows.norms[selected])));
    for (const metric of ["cosine", "dot"]) fillList(metric);
    const absent = ["cosine", "dot"].some((m) => data.neighbors[m].ids[selected].some((id) => !rowOf.has(id)));
    document.getElementById("absent-hint").hidden = !absent;
  }

  function fillList(metric) {
    const table = document.getElementById("list-" + metric);
    const head = document.createElement("tr");
    for (const name of words.columns) {
      const th = document.createElement("th");
      th.textContent = name;
      head.appendChild(th);
    }
    table.tHead.replaceChildren(head);
    const listed = data.neighbors[metric];
    const scores = columnText(listed.scores[selected]);
    const lengths = columnText(listed.ids[selected].map((id) => data.named.norms[namedAt.get(id)]));
    table.tBodies[0].replaceChildren(...listed.ids[selected].map((id, rank) => {
      const tr = document.createElement("tr");
      tr.append(cell(String(rank + 1), "num"), cell(tokenElement(id)), cell(String(id), "num"),
                cell(scores[rank], "num"), cell(lengths[rank], "num"));
      if (rowOf.has(id)) {
        tr.className = "shown";
        tr.tabIndex = 0;
        tr.addEventListener("click", () => select(rowOf.get(id)));
        tr.addEventListener("keydown", (e) => { if (e.key === "Enter") select(rowOf.get(id)); });
      } else {
        tr.className = "absent";
        tr.title = words.not_shown;
      }
      return tr;
    }));
  }

  // -- search ------------------------------------------------------------------------

  // Text compared as people read it: canonically composed (NFC: ALBERT's vocabulary stores 표 decomposed,
  // ᄑ + ᅭ, which reads the same as the typed syllable), case folded.
  const fold = (t) => (t === null || t === undefined ? "" : t.normalize("NFC").toLowerCase());
  // Each point's token as typed (its spaces as spaces) and as shown (its spaces as signs), folded.
  const folded = ids.map((id) => fold(data.named.tokens[namedAt.get(id)]));
  const foldedShown = ids.map((id) => fold(tokenOf(id)));

  // The points whose token holds the text (folded), as typed or as shown ("␣the" finds " the"):
  // exact first, then prefixes, then shorter tokens; "id:N" or a bare number also finds the point of id N.
  function find(text) {
    const query = fold(text.trim());
    if (!query) return [];
    const byId = /^(?:id:\s*)?([0-9]+)$/.exec(query);
    const found = [];
    if (byId && rowOf.has(Number(byId[1]))) found.push(rowOf.get(Number(byId[1])));
    if (!query.startsWith("id:")) {
      const rank = (i) => (folded[i] === query || foldedShown[i] === query ? 0
                           : folded[i].startsWith(query) || foldedShown[i].startsWith(query) ? 1 : 2);
      const hits = [];
      for (let i = 0; i < n; i++) {
        if ((folded[i].includes(query) || foldedShown[i].includes(query)) && found[0] !== i) hits.push(i);
      }
      hits.sort((a, b) => rank(a) - rank(b) || folded[a].length - folded[b].length || ids[a] - ids[b]);
      found.push(...hits);
    }
    return found;
  }

  function search(text) {
    const found = find(text);
    const count = document.getElementById("match-count");
    count.textContent = !text.trim() ? "" : found.length ? words.matches.replace("{count}", found.length.toLocaleString())
                                                          : words.no_match;
    document.getElementById("matches").replaceChildren(...found.slice(0, MATCHES_LISTED).map((i) => {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.append(tokenElement(ids[i]), document.createTextNode(" id " + ids[i]));
      button.addEventListener("click", () => select(i));
      li.appendChild(button);
      return li;
    }));
    ringed = found;
    if (!ringPending) {  // the list answers at once; the rings and the zoom are drawn once per frame, in one update
      ringPending = true;
      requestAnimationFrame(drawRings);
    }
    return found;
  }

  let ringed = [];
  let ringPending = false;

  function drawRings() {
    ringPending = false;
    const rings = {};
    ["x", "y", "z"].slice(0, data.dims).forEach((axis, c) => { rings[axis] = [ringed.map((i) => coords[c][i])]; });
    rings.text = [ringLabels()];
    if (LABEL_ALL) restyle({text: [pointLabels()]}, 0);  // a listed match is labelled by its ring, not twice
    if (!drawn) return restyle(rings, 2);
    Plotly.update(plot, rings, ringed.length ? zoomTo(ringed) : {}, [2]).then(relabel);  // the zoom moved them
  }

  // -- labels: Plotly places none, so they are thinned here -------------------------------

  // Which points carry a text label: the selection's (the selected one first, then its neighbours), then the
  // listed search matches, then, on a page of LABEL_ALL points or fewer, every other point. In 2-D, greedily in
  // that order, a label is left out (its token shows on hover) when its box would touch one kept before it on
  // the screen; 3-D scenes keep them all. Each point is labelled by one trace only: the first group it is in.
  const LABEL_HEIGHT = 18;  // pixels: a 14-pixel label and a gap
  const LABEL_ALL = fig.data[0].mode === "markers+text";  // report/projector.py's LABEL_ALL: a small page
  function labelOrder() {
    const rows = [...overlay];
    const seen = new Set(overlay);
    ringed.slice(0, MATCHES_LISTED).forEach((i) => { if (!seen.has(i)) { seen.add(i); rows.push(i); } });
    if (LABEL_ALL) for (let i = 0; i < n; i++) if (!seen.has(i)) rows.push(i);
    return rows;
  }
  function labelsKept() {
    const rows = labelOrder();
    const keep = new Set();
    if (data.dims !== 2 || !drawn) {
      rows.forEach((r) => keep.add(r));
      return keep;
    }
    const xa = plot._fullLayout.xaxis, ya = plot._fullLayout.yaxis, boxes = [];
    for (const r of rows) {
      const x = xa.l2p(coords[0][r]), y = ya.l2p(coords[1][r]);
      const half = 4 * Math.max(2, shown(ids[r]).length);  // about half a label's width at 14 pixels
      if (boxes.some(([bx, by, bh]) => Math.abs(bx - x) < bh + half + 4 && Math.abs(by - y) < LABEL_HEIGHT)) continue;
      boxes.push([x, y, half]);
      keep.add(r);
    }
    return keep;
  }
  function overlayLabels() {
    const keep = labelsKept();
    return overlay.map((r) => (keep.has(r) ? labelText(1, shown(ids[r])) : ""));
  }
  // The matches listed in the panel carry their token beside the ring; the rest are rings only, and so are
  // matches already labelled as the selection or its neighbours (one label per point, not two on top).
  function ringLabels() {
    const keep = labelsKept(), labelled = new Set(overlay);
    return ringed.map((i, rank) => (rank < MATCHES_LISTED && !labelled.has(i) && keep.has(i) ? labelText(2, shown(ids[i])) : ""));
  }
  // On a small page, trace 0 labels the points that neither the selection nor a listed match labels.
  function pointLabels() {
    const keep = labelsKept(), elsewhere = new Set([...overlay, ...ringed.slice(0, MATCHES_LISTED)]);
    return ids.map((id, i) => (LABEL_ALL && !elsewhere.has(i) && keep.has(i) ? labelText(0, shown(id)) : ""));
  }
  // After a zoom or a pan the points sit elsewhere on the screen: thin the labels again.
  function relabel() {
    if (data.dims !== 2 && !LABEL_ALL) return;
    if (LABEL_ALL) Plotly.restyle(plot, {text: [pointLabels(), overlayLabels(), ringLabels()]}, [0, 1, 2]);
    else Plotly.restyle(plot, {text: [overlayLabels(), ringLabels()]}, [1, 2]);
  }

  const extent = coords.map((values) => range(values, values.keys()));

  function range(values, subset) {
    let lo = Infinity, hi = -Infinity;
    for (const i of subset) { lo = Math.min(lo, values[i]); hi = Math.max(hi, values[i]); }
    return [lo, hi];
  }

  // 2-D: the matches' bounding box with a margin, as a layout update; a 3-D scene keeps its camera (the rings
  // show the matches).
  function zoomTo(rows) {
    if (data.dims !== 2) return {};
    const update = {};
    coords.forEach((values, c) => {
      const [lo, hi] = range(values, rows);
      const [flo, fhi] = extent[c];
      // A margin of 15%, and never narrower than 30% of the whole cloud: the matches keep some context.
      const half = Math.max((hi - lo) * 0.65, (fhi - flo) * 0.15, 1e-9);
      const middle = (lo + hi) / 2;
      update[(c === 0 ? "xaxis" : "yaxis") + ".range"] = [middle - half, middle + half];
    });
    return update;
  }

  function resetView() {
    const input = document.getElementById("search");
    input.value = "";
    search("");
    if (data.dims === 2) Plotly.relayout(plot, {"xaxis.autorange": true, "yaxis.autorange": true});
    else Plotly.relayout(plot, {"scene.camera": JSON.parse(camera)});
  }

  // -- clicks in 3-D ---------------------------------------------------------------------

  // A point's token id in a Plotly event (its customdata; a 3-D event may carry only the trace's array).
  function idOf(point) {
    if (point.customdata !== undefined) return point.customdata;
    const array = point.data && point.data.customdata;
    return array ? array[point.pointNumber] : undefined;
  }

  // Plotly's 3-D scene emits plotly_click only when the press lands within 5 pixels of a marker's centre,
  // though it shows a point's label from farther (its pick radius): a click on a labelled point did nothing.
  // Here a press and release without a drag (under 5 pixels of travel, so turning the scene never selects)
  // selects the point whose label is showing.
  function clickWhereHovered() {
    let hovered;
    let down = null;
    plot.on("plotly_hover", (event) => { hovered = idOf(event.points[0]); });
    plot.on("plotly_unhover", () => { hovered = undefined; });
    plot.addEventListener("pointerdown", (e) => { down = [e.clientX, e.clientY]; }, true);
    plot.addEventListener("pointerup", (e) => {
      const still = down !== null && Math.hypot(e.clientX - down[0], e.clientY - down[1]) < 5;
      down = null;
      if (still && rowOf.has(hovered)) select(rowOf.get(hovered));
    }, true);
  }

  // -- start -------------------------------------------------------------------------

  function webgl() {
    try {
      const canvas = document.createElement("canvas");
      return Boolean(window.WebGLRenderingContext && (canvas.getContext("webgl") || canvas.getContext("experimental-webgl")));
    } catch (e) {
      return false;
    }
  }

  function ready() {
    // Two frames after the first draw: the points are on the screen.
    requestAnimationFrame(() => requestAnimationFrame(() => {
      document.body.dataset.readyMs = performance.now().toFixed(0);
    }));
  }

  if (!webgl()) {
    if (data.dims === 3) {
      document.getElementById("no-webgl").hidden = false;
      ready();
      return;
    }
    for (const trace of fig.data) if (trace.type === "scattergl") trace.type = "scatter";  // SVG: slower, same picture
  }
  fig.data[0].text = pointLabels();  // after the choice of traces: an SVG trace's labels are escaped (labelText)
  fig.data[0].hovertext = ids.map(hoverText);
  if (data.probe !== null && rowOf.has(data.probe)) {
    select(rowOf.get(data.probe));
  } else {
    recolour();
    drawSelection();
  }
  // The page's own faces (report/webfont.py) are loaded before the first draw: Plotly measures its labels,
  // and relabel() their boxes, with the fonts they are drawn in.
  const faces = [];
  if (document.fonts) {
    document.fonts.forEach((face) => {
      if (face.family.replace(/["']/g, "") === data.font_family) faces.push(face.load());
    });
  }
  Promise.all(faces).catch(() => null).then(() => Plotly.newPlot(plot, fig.data, fig.layout, data.config)).then(() => {
    drawn = true;
    document.body.dataset.plotMs = performance.now().toFixed(0);
    plot.on("plotly_click", (event) => {
      const id = idOf(event.points[0]);
      if (rowOf.has(id)) select(rowOf.get(id));
    });
    if (data.dims === 3) clickWhereHovered();
    relabel();  // now that the points have screen positions
    plot.on("plotly_relayout", (event) => { if (Object.keys(event).some((key) => /axis/.test(key))) relabel(); });
    const input = document.getElementById("search");
    input.addEventListener("input", () => search(input.value));
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        const found = search(input.value);
        if (found.length) select(found[0]);
      }
    });
    for (const radio of document.querySelectorAll("input[name=colour]")) {
      radio.addEventListener("change", () => { colourBy = radio.value; recolour(); });
    }
    document.getElementById("reset").addEventListener("click", resetView);
    ready();
  });
})();
