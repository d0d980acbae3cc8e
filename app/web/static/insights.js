// The shop's analytics view: GET /analytics over a window, as tiles and four tables.
// /analytics is an admin route: when the service has an API_KEY it answers 401, and the
// page asks for the key once and keeps it for the tab (sessionStorage), sent as X-API-Key.
// Queries are shoppers' words: they reach the DOM only through textContent.
"use strict";

(() => {
  const KEY_STORE = "shop-analytics-key";
  const PERCENT = new Intl.NumberFormat("en-US", { style: "percent", maximumFractionDigits: 1 });
  const COUNT = new Intl.NumberFormat("en-US");
  const $ = (id) => document.getElementById(id);
  const days = $("days");
  const keyForm = $("key-form");
  const keyInput = $("api-key");
  const keyError = $("key-error");
  const status = $("status");
  const report = $("report");
  let inFlight = null;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function showStatus(text, kind) {
    status.textContent = text;
    status.className = "status" + (kind ? " status--" + kind : "");
    status.hidden = !text;
  }

  function ctrCell(ctr) {
    // A meter, not a styled bar: the page's CSP forbids inline styles, and a meter is read
    // out by screen readers with its value.
    const td = el("td", "num");
    const meter = el("meter");
    meter.min = 0;
    meter.max = 1;
    meter.value = ctr;
    meter.setAttribute("aria-hidden", "true");
    td.append(meter, " ", PERCENT.format(ctr));
    return td;
  }

  function fill(tableId, rows, cells, columns) {
    const body = $(tableId).tBodies[0];
    body.replaceChildren();
    if (!rows.length) {
      const td = el("td", "grid__empty", "Nothing in this window.");
      td.colSpan = columns;
      const tr = el("tr");
      tr.append(td);
      body.append(tr);
      return;
    }
    for (const row of rows) {
      const tr = el("tr");
      tr.append(...cells(row));
      body.append(tr);
    }
  }

  const text = (value) => el("td", "", value);
  const num = (value) => el("td", "num", COUNT.format(value));

  function render(a) {
    $("t-answers").textContent = COUNT.format(a.answers);
    $("t-clicks").textContent = COUNT.format(a.clicks);
    $("t-ctr").textContent = a.answers ? PERCENT.format(a.clicks / a.answers) : "–";
    $("t-carts").textContent = COUNT.format(a.add_to_carts);
    $("t-purchases").textContent = COUNT.format(a.purchases);
    fill("top-queries", a.top_queries, (q) => [
      text(q.query || "(empty)"), num(q.answers), num(q.clicks), ctrCell(q.ctr), num(q.purchases),
    ], 5);
    fill("no-match", a.no_match_queries, (q) => [text(q.query || "(empty)"), num(q.count)], 2);
    fill("by-position", a.ctr_by_position, (p) => [
      num(p.position), num(p.impressions), num(p.clicks), ctrCell(p.ctr),
    ], 4);
    fill("purchases", a.purchases_by_query, (q) => [text(q.query || "(empty)"), num(q.count)], 2);
    report.hidden = false;
  }

  async function detail(response) {
    try {
      const body = await response.json();
      if (typeof body.detail === "string") return body.detail;
    } catch (_) {
      // not JSON: the status line says enough
    }
    return `the service answered ${response.status}`;
  }

  async function load() {
    if (inFlight) inFlight.abort();
    const controller = new AbortController();
    inFlight = controller;
    const windowDays = days.value;
    const url = new URL(window.location.href);
    url.searchParams.set("days", windowDays);
    history.replaceState(null, "", url);
    showStatus("Reading the interactions table…", "loading");
    const headers = { Accept: "application/json" };
    const key = sessionStorage.getItem(KEY_STORE);
    if (key) headers["X-API-Key"] = key;
    let response;
    try {
      response = await fetch(`/analytics?days=${encodeURIComponent(windowDays)}&top=20`, {
        headers,
        signal: controller.signal,
      });
    } catch (err) {
      if (controller.signal.aborted) return;
      showStatus("Could not reach the service. Check your connection and refresh.", "error");
      return;
    }
    if (controller !== inFlight) return;
    if (response.status === 401) {
      report.hidden = true;
      keyForm.hidden = false;
      keyError.hidden = !key;
      keyError.textContent = key ? "That key was refused." : "";
      if (key) sessionStorage.removeItem(KEY_STORE);
      showStatus("This view needs the service's API key.", "");
      keyInput.focus();
      return;
    }
    if (!response.ok) {
      showStatus(`Could not read the analytics: ${await detail(response)}`, "error");
      return;
    }
    // A newer window can abort this one while its body is still arriving: the read then
    // rejects, and must end quietly rather than as an unhandled rejection.
    let body;
    try {
      body = await response.json();
    } catch (err) {
      if (controller.signal.aborted) return;
      showStatus("Could not read the analytics. Refresh to try again.", "error");
      return;
    }
    if (controller !== inFlight) return;
    keyForm.hidden = true;
    render(body);
    showStatus("", "");
  }

  $("window-form").addEventListener("submit", (event) => {
    event.preventDefault();
    load();
  });
  days.addEventListener("change", load);
  keyForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const key = keyInput.value.trim();
    if (!key) return;
    sessionStorage.setItem(KEY_STORE, key);
    keyInput.value = "";
    load();
  });

  const asked = new URLSearchParams(window.location.search).get("days");
  if (asked && [...days.options].some((o) => o.value === asked)) days.value = asked;
  load();
})();
