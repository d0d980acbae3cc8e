// The shopper page: sends the question to POST /recommend and renders the answer and cards.
// The answer is streamed (Accept: text/event-stream): the cards show as soon as the
// `products` event comes, the text grows with each `delta`, and `done` settles it. Earlier
// questions stay above as a thread; a follow-up sends back the last answer's `conversation`.
//
// Security rule for this file: everything that comes from the server (seller text, the
// written answer, names) is untrusted and reaches the DOM only through textContent, text
// nodes or attribute setters — never innerHTML — so markup in a description shows as text.
"use strict";

(() => {
  const REQUEST_TIMEOUT_MS = 30000;
  // The citation form the answer uses for products: [id:123].
  const CITATION = /\[id:\s*(\d+)\]/g;
  const PRICE = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" });

  const $ = (id) => document.getElementById(id);
  const form = $("ask-form");
  const query = $("query");
  const queryError = $("query-error");
  const minPrice = $("min-price");
  const maxPrice = $("max-price");
  const category = $("category");
  const filterError = $("filter-error");
  const submit = $("submit");
  const results = $("results");
  const status = $("status");
  const answer = $("answer");
  const answerText = $("answer-text");
  const answerSource = $("answer-source");
  const notice = $("notice");
  const productsHead = $("products-head");
  const productsList = $("products");
  const productsCount = $("products-count");
  const applied = $("applied");
  const appliedList = $("applied-list");
  const nearest = $("nearest");
  const threadSection = $("thread-section");
  const thread = $("thread");
  const turnQuestion = $("turn-question");
  const newSearch = $("new-search");
  // Where a filter came from, as the chip says it; an unknown source is shown as it is.
  const SOURCE_LABELS = { query: "your words", request: "filters", conversation: "earlier" };

  // The request being answered; a newer question aborts it and its late reply is ignored.
  let inFlight = null;
  // Constraints heard in the words that the shopper removed (chips taken off); they stay
  // off until the question itself changes.
  let ignoredParsed = new Set();
  let askedText = null;
  // The turn on screen: its question, the `conversation` it was sent with and the one its
  // answer returned, and the final answer (null until `done`).
  let current = null;
  const FORM_FIELDS = { category: category, min_price: minPrice, max_price: maxPrice };

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function showFieldError(target, input, message) {
    target.textContent = message;
    target.hidden = false;
    if (input) {
      input.setAttribute("aria-invalid", "true");
      input.focus();
    }
  }

  function clearFieldErrors() {
    for (const target of [queryError, filterError]) {
      target.textContent = "";
      target.hidden = true;
    }
    for (const input of [query, minPrice, maxPrice]) input.removeAttribute("aria-invalid");
  }

  // A price box: null when empty, NaN when the browser could not parse what was typed.
  function readPrice(input) {
    if (input.validity.badInput) return Number.NaN;
    const raw = input.value.trim();
    return raw === "" ? null : Number(raw);
  }

  // The request body, or null after showing why the form cannot be sent.
  function buildRequest() {
    clearFieldErrors();
    const text = query.value.trim();
    if (!text) {
      showFieldError(queryError, query, "Please tell us what you are looking for.");
      return null;
    }
    const filters = {};
    const cat = category.value.trim();
    if (cat) filters.category = cat;
    const bounds = [
      ["min_price", minPrice, "Minimum price"],
      ["max_price", maxPrice, "Maximum price"],
    ];
    for (const [key, input, label] of bounds) {
      const value = readPrice(input);
      if (value === null) continue;
      if (!Number.isFinite(value) || value < 0) {
        showFieldError(filterError, input, `${label} must be a number of 0 or more.`);
        return null;
      }
      filters[key] = value;
    }
    if (
      filters.min_price !== undefined &&
      filters.max_price !== undefined &&
      filters.min_price > filters.max_price
    ) {
      showFieldError(filterError, minPrice, "Minimum price must not be above the maximum price.");
      return null;
    }
    const body = { query: text };
    if (Object.keys(filters).length) body.filters = filters;
    if (text !== askedText) ignoredParsed = new Set();
    askedText = text;
    if (ignoredParsed.size) body.ignore_parsed = [...ignoredParsed];
    return body;
  }

  function setLoading(loading) {
    submit.disabled = loading;
    submit.classList.toggle("is-loading", loading);
    submit.querySelector(".btn__label").textContent = loading ? "Searching…" : "Find products";
    results.setAttribute("aria-busy", String(loading));
    if (!loading) return;
    answer.hidden = true;
    productsHead.hidden = true;
    applied.hidden = true;
    nearest.hidden = true;
    showStatus("loading", "Looking through the catalogue…");
    const skeletons = [];
    for (let i = 0; i < 3; i += 1) skeletons.push(el("li", "card card--skeleton"));
    productsList.replaceChildren(...skeletons);
  }

  function showStatus(kind, title, detail) {
    status.className = `status status--${kind}`;
    const nodes = [el("strong", "status__title", title)];
    if (detail) nodes.push(el("span", "status__detail", detail));
    status.replaceChildren(...nodes);
    status.hidden = false;
  }

  // FastAPI's detail is a string, or a list of validation errors ({loc, msg}).
  function describeDetail(detail) {
    if (typeof detail === "string") return detail;
    if (Array.isArray(detail)) {
      return detail
        .map((e) => {
          const where = Array.isArray(e?.loc) ? e.loc.filter((p) => p !== "body").join(".") : "";
          const msg = typeof e?.msg === "string" ? e.msg : "invalid value";
          return where ? `${where}: ${msg}` : msg;
        })
        .join("; ");
    }
    return "";
  }

  function showHttpError(statusCode, data) {
    const detail = describeDetail(data?.detail);
    productsList.replaceChildren();
    if (statusCode === 503) {
      showStatus(
        "error",
        "Product search is temporarily unavailable.",
        "The catalogue may still be loading. Please try again in a moment.",
      );
    } else if (statusCode === 413) {
      showStatus("error", "That request is too large.", "Please shorten your question.");
    } else if (statusCode === 429) {
      showStatus("error", "Too many requests.", "Please wait a moment and try again.");
    } else if (statusCode >= 400 && statusCode < 500) {
      showStatus("error", "We couldn't use that request.", detail || `Error ${statusCode}.`);
    } else {
      showStatus(
        "error",
        "Something went wrong on our side.",
        `Please try again in a moment (error ${statusCode}).`,
      );
    }
  }

  function productLink(product) {
    const link = el("a", "cite", product.name);
    link.href = `#product-${encodeURIComponent(product.id)}`;
    return link;
  }

  // The answer as text nodes, with each [id:N] citation turned into its product's name,
  // a link to its card when `linked`: when the name is written just before the citation,
  // the name becomes the link; otherwise the name is inserted. Citations of products not
  // shown are dropped.
  function messageNodes(message, products, linked) {
    const name = (product) => (linked ? productLink(product) : product.name);
    const byId = new Map(products.map((p) => [String(p.id), p]));
    const nodes = [];
    let last = 0;
    for (const match of message.matchAll(CITATION)) {
      const before = message.slice(last, match.index).trimEnd();
      last = match.index + match[0].length;
      const product = byId.get(match[1]);
      const at = product ? before.lastIndexOf(product.name) : -1;
      if (!product) {
        nodes.push(before);
      } else if (at >= 0) {
        nodes.push(before.slice(0, at), name(product), before.slice(at + product.name.length));
      } else {
        nodes.push(before ? `${before} ` : "", name(product));
      }
    }
    nodes.push(message.slice(last));
    return nodes;
  }

  function renderMessage(message, products) {
    answerText.replaceChildren(...messageNodes(message, products, true));
  }

  function sourceLabel(source) {
    return SOURCE_LABELS[source] || String(source);
  }

  // Taking a chip off asks again without it: a form filter is cleared in the form, any
  // other (heard in the words, or carried from earlier) is ignored from then on.
  function removeFilter(filter) {
    if (filter.source !== "request") {
      ignoredParsed.add(filter.field);
    } else if (FORM_FIELDS[filter.field]) {
      FORM_FIELDS[filter.field].value = "";
    }
    form.requestSubmit();
  }

  function filterChip(filter) {
    const item = el("li", filter.hard ? "filter-chip" : "filter-chip filter-chip--soft");
    item.dataset.field = String(filter.field);
    item.dataset.source = String(filter.source);
    const label = el("span", "filter-chip__label", filter.label);
    if (filter.source === "query" && filter.text) label.title = `From your words: “${filter.text}”`;
    const source = el("span", "filter-chip__source", sourceLabel(filter.source));
    const remove = el("button", "filter-chip__remove", "×");
    remove.type = "button";
    remove.setAttribute("aria-label", `Remove filter ${filter.label}`);
    remove.addEventListener("click", () => removeFilter(filter));
    item.append(label, source, remove);
    return item;
  }

  function renderApplied(data) {
    const filters = Array.isArray(data.filters_applied) ? data.filters_applied : [];
    appliedList.replaceChildren(...filters.map(filterChip));
    applied.hidden = filters.length === 0;
    const products = Array.isArray(data.products) ? data.products : [];
    const closest = Array.isArray(data.closest_outside_filters) ? data.closest_outside_filters : [];
    const priced = data.nearest_matches || closest.length;
    nearest.hidden = !(priced || data.no_close_match || data.not_carried);
    if (priced) {
      const bounds = filters.filter((f) => f.hard && /_price$/.test(f.field)).map((f) => f.label);
      const fit = products.length;
      nearest.textContent = data.nearest_matches
        ? `Nothing matches ${bounds.join(" and ")}. These are the nearest matches, outside it.`
        : `Only ${fit} ${fit === 1 ? "product matches" : "products match"} ${bounds.join(" and ")}. ` +
          "The closest ones outside that price range follow, marked.";
    } else if (data.not_carried) {
      nearest.textContent = `The shop has nothing called “${data.not_carried}”. These are the closest products.`;
    } else if (data.no_close_match) {
      nearest.textContent = "Nothing in the shop closely matches this. These are the nearest products.";
    }
  }

  // A shopper opening a product is a click on the answer that showed it (POST /events);
  // best effort: the page never waits for it or shows its failure.
  function recordClick(productId, recommendationId) {
    if (!recommendationId) return;
    const event = { type: "click", product_id: productId, recommendation_id: recommendationId };
    fetch("/events", {
      method: "POST",
      keepalive: true,
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ events: [event] }),
    }).catch(() => {});
  }

  function productCard(product, rank, outside, recommendationId) {
    const card = el("li", "card");
    card.id = `product-${product.id}`;
    card.dataset.productId = String(product.id);

    const meta = el("div", "card__meta");
    meta.append(el("span", "card__rank", `#${rank}`));
    if (product.category) meta.append(el("span", "pill", product.category));
    if (outside) meta.append(el("span", "pill pill--outside", "Outside your price range"));
    card.append(meta);

    const title = el("h3", "card__name");
    const open = el("a", "card__open", product.name);
    open.href = `#product-${encodeURIComponent(product.id)}`;
    open.addEventListener("click", () => {
      card.classList.add("card--opened");
      recordClick(product.id, recommendationId);
    });
    title.append(open);
    card.append(title);
    if (product.brand) card.append(el("p", "card__brand", `by ${product.brand}`));
    const price = typeof product.price === "number" ? PRICE.format(product.price) : "Price on request";
    card.append(el("p", "card__price", price));

    const matched = Array.isArray(product.matched_content) ? product.matched_content : [];
    if (matched.length) {
      const why = el("div", "card__match");
      why.append(el("p", "card__match-label", "From the description"));
      why.append(el("p", "card__match-text", matched[0]));
      if (matched.length > 1) {
        const more = el("details", "card__more");
        more.append(el("summary", null, "More matching text"));
        for (const text of matched.slice(1)) more.append(el("p", "card__match-text", text));
        why.append(more);
      }
      card.append(why);
    }
    return card;
  }

  // The cards, the chips and the price notes: from the `products` event, then from `done`.
  function renderProducts(data) {
    const products = Array.isArray(data.products) ? data.products : [];
    status.hidden = true;
    renderApplied(data);
    const closest = Array.isArray(data.closest_outside_filters) ? data.closest_outside_filters : [];
    productsList.replaceChildren(
      ...[...products, ...closest].map((p, i) =>
        productCard(p, i + 1, Boolean(p.outside_filters), data.recommendation_id),
      ),
    );
    productsHead.hidden = products.length === 0;
    productsCount.textContent = `(${products.length})`;
    if (!products.length) {
      showStatus("empty", "No matching products.", "Try different words or loosen the filters.");
    }
  }

  // The answer box while the text comes in (the caret shows it is still being written).
  function startAnswer() {
    answerText.replaceChildren();
    answerSource.textContent = "Writing…";
    answerSource.className = "badge badge--plain";
    notice.hidden = true;
    answer.classList.add("answer--writing");
    answer.hidden = false;
  }

  function render(data) {
    const products = Array.isArray(data.products) ? data.products : [];
    renderProducts(data);
    answer.classList.remove("answer--writing");
    renderMessage(typeof data.message === "string" ? data.message : "", products);
    const extractive = data.generator === "extractive";
    answerSource.textContent = extractive ? "Quick summary" : "AI assistant";
    answerSource.className = extractive ? "badge badge--plain" : "badge badge--ai";
    if (data.degraded) {
      notice.textContent =
        "Our AI assistant is unavailable right now, so this summary was put together " +
        "directly from the product descriptions.";
    } else if (extractive) {
      notice.textContent = "This summary was put together directly from the product descriptions.";
    }
    notice.hidden = !(data.degraded || extractive);
    notice.classList.toggle("notice--warn", Boolean(data.degraded));
    answer.hidden = false;
  }

  // A finished turn moves up into the thread: its question, chips, answer and products,
  // as text (its cards are gone, so citations become plain names).
  function archiveTurn(turn) {
    const data = turn.data;
    const products = Array.isArray(data.products) ? data.products : [];
    const filters = Array.isArray(data.filters_applied) ? data.filters_applied : [];
    const item = el("li", "turn");
    item.append(el("p", "turn__question", turn.query));
    if (filters.length) {
      const chips = el("ul", "turn__filters");
      for (const f of filters) {
        const chip = el("li", "turn__chip", f.label);
        chip.dataset.source = String(f.source);
        chip.append(" ", el("span", "turn__chip-source", sourceLabel(f.source)));
        chips.append(chip);
      }
      item.append(chips);
    }
    const text = el("p", "turn__answer");
    text.append(...messageNodes(typeof data.message === "string" ? data.message : "", products, false));
    item.append(text);
    if (products.length) {
      item.append(el("p", "turn__products", `Products: ${products.map((p) => p.name).join("; ")}`));
    }
    thread.append(item);
    threadSection.hidden = false;
  }

  // Server-Sent Events from a fetch body: calls onEvent(name, data) per event; resolves
  // when the body ends.
  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) onEvent(name, JSON.parse(data.join("\n")));
        end = buffer.indexOf("\n\n");
      }
    }
  }

  // The streamed answer; false when the stream ended without its `done` event.
  async function readStream(response, controller, turn) {
    let products = [];
    let text = "";
    let finished = false;
    await readEvents(response, (name, data) => {
      if (inFlight !== controller) return;
      if (name === "products") {
        products = [
          ...(Array.isArray(data.products) ? data.products : []),
          ...(Array.isArray(data.closest_outside_filters) ? data.closest_outside_filters : []),
        ];
        renderProducts(data);
        startAnswer();
      } else if (name === "delta" && typeof data.text === "string") {
        text += data.text;
        renderMessage(text, products);
      } else if (name === "done") {
        finished = true;
        turn.data = data;
        turn.received = typeof data.conversation === "string" ? data.conversation : null;
        render(data);
      }
    });
    return finished;
  }

  async function ask(body, turn) {
    if (inFlight) inFlight.abort();
    const controller = new AbortController();
    inFlight = controller;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, REQUEST_TIMEOUT_MS);
    setLoading(true);
    try {
      let response;
      try {
        response = await fetch("/recommend", {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            Accept: "text/event-stream, application/json;q=0.9",
          },
          body: JSON.stringify(body),
          signal: controller.signal,
        });
      } catch {
        if (inFlight !== controller) return;
        productsList.replaceChildren();
        showStatus(
          "error",
          timedOut ? "The shop took too long to answer." : "Could not reach the shop.",
          timedOut ? "Please try again." : "Check your connection and try again.",
        );
        return;
      }
      const type = response.headers.get("content-type") || "";
      if (response.ok && type.startsWith("text/event-stream")) {
        let finished = false;
        try {
          finished = await readStream(response, controller, turn);
        } catch {
          finished = false;
        }
        if (inFlight !== controller || finished) return;
        answer.hidden = true;
        showStatus(
          "error",
          timedOut ? "The shop took too long to answer." : "The answer was cut off.",
          "Please try again.",
        );
        return;
      }
      let data = null;
      try {
        data = await response.json();
      } catch {
        data = null; // a proxy's HTML error page: the status code still tells the story
      }
      if (inFlight !== controller) return;
      if (!response.ok || !data || data.success === false) {
        showHttpError(response.ok ? 502 : response.status, data);
        return;
      }
      turn.data = data;
      turn.received = typeof data.conversation === "string" ? data.conversation : null;
      render(data);
    } finally {
      clearTimeout(timer);
      if (inFlight === controller) {
        inFlight = null;
        setLoading(false);
      }
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const body = buildRequest();
    if (!body) return;
    const url = new URL(window.location.href);
    url.searchParams.set("q", body.query);
    window.history.replaceState(null, "", url);
    // A new question follows the answered turn on screen (which moves up into the
    // thread); the same question again (a chip taken off) replaces it.
    const followUp = current !== null && current.data !== null && body.query !== current.query;
    const conversation = followUp ? current.received : current ? current.sent : null;
    if (followUp) archiveTurn(current);
    // Sent only when the server gave one: a server without it refuses unknown fields.
    if (conversation) body.conversation = conversation;
    current = { query: body.query, sent: conversation, received: null, data: null };
    turnQuestion.textContent = body.query;
    turnQuestion.hidden = false;
    ask(body, current);
  });

  // Starting over forgets the thread: the next question is not a follow-up.
  newSearch.addEventListener("click", () => {
    if (inFlight) inFlight.abort();
    current = null;
    thread.replaceChildren();
    threadSection.hidden = true;
    turnQuestion.hidden = true;
    answer.hidden = true;
    applied.hidden = true;
    nearest.hidden = true;
    status.hidden = true;
    productsHead.hidden = true;
    productsList.replaceChildren();
    query.value = "";
    query.focus();
  });

  // Enter sends, Shift+Enter adds a line: what people expect of a search box.
  query.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  query.addEventListener("input", () => {
    if (query.value.trim()) {
      queryError.hidden = true;
      query.removeAttribute("aria-invalid");
    }
  });

  for (const chip of document.querySelectorAll(".chip[data-query]")) {
    chip.addEventListener("click", () => {
      query.value = chip.dataset.query;
      form.requestSubmit();
    });
  }

  // A shared link (?q=...) asks its question straight away.
  const shared = new URL(window.location.href).searchParams.get("q");
  if (shared && shared.trim()) {
    query.value = shared;
    form.requestSubmit();
  }
})();
