"use strict";

// The Memory page: two dropdowns, two editors with their history, the notes beside each
// document (one opened at a time in a third editor, with its history), and the prefetch the
// agent would get. It is a client of the /v1 API like any other: every save is a sync of a
// `replace` guarded by the version its editor loaded (a note's: a `create`, `replace`,
// `rename` or `delete` naming it), and every revert carries that version in If-Match, so none
// ever overwrites a newer one.

const OTHER = "\u0000other";
const STORES = ["memory", "user"];
const TOKEN_KEY = "memory-token";

const $ = (selector) => document.querySelector(selector);
const personalitySelect = $("#personality");
const userSelect = $("#user");
const FILE_NAMES = { memory: "MEMORY.md", user: "USER.md" };
const panels = Object.fromEntries([...STORES, "note"].map((key) => [key, editor(key)]));
panels.note.hidden = true;
// The document each editor last loaded or saved: its version guards the next save.
const loaded = { memory: null, user: null, note: null };
// The note the note editor shows: the store whose scope it is in, its path there, and whether
// it is still to be created (a new note before its first save).
let opened = null;
let token = sessionStorage.getItem(TOKEN_KEY);

// An editor for `key`'s document (`memory`, `user`, or `note`: the note opened), the pair's
// before the notes, the note's after them.
function editor(key) {
  const panel = $("#editor").content.firstElementChild.cloneNode(true);
  panel.dataset.store = key;
  const name = FILE_NAMES[key] ?? "Note";
  panel.querySelector("h2").textContent = name;
  panel.querySelector("textarea").setAttribute("aria-label", `${name} text`);
  $("main").insertBefore(panel, key === "note" ? $(".prefetch") : $(".notes"));
  return panel;
}

// What the layout paths of `store`'s scope start with: "" beside the global MEMORY.md,
// "personalities/<id>/" or "users/<id>/".
function scopeOf(store) {
  const path = loaded[store]?.path ?? "";
  return path.slice(0, path.lastIndexOf("/") + 1);
}

// The route of a note of `store`'s scope, or of `operation` on it ("revisions", "revert"):
// a note's path ends its routes, so the operation comes before it.
function noteRoute(store, path, operation) {
  const segments = path.split("/").map(encodeURIComponent).join("/");
  return `/v1/documents/${scopeOf(store)}${operation ? `${operation}/` : ""}notes/${segments}`;
}

// The route of `operation` on the history of what editor `key` shows.
function historyRoute(key, operation) {
  return key === "note"
    ? noteRoute(opened.store, opened.path, operation)
    : `/v1/documents/${loaded[key].path}/${operation}`;
}

// A problem document (RFC 9457) from the API: `kind` is the error's class.
class ApiError extends Error {
  constructor(status, body) {
    super(body.detail || `the server answered HTTP ${status}`);
    this.kind = body.kind;
    this.status = status;
  }
}

async function api(path, options = {}) {
  const headers = { Accept: "application/json", ...(options.headers ?? {}) };
  if (options.body) headers["Content-Type"] = "application/json";
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(path, { ...options, headers });
  const body = await response.json().catch(() => ({}));
  if (response.status === 401) {
    const given = window.prompt("This server needs its token:");
    if (given) {
      token = given;
      sessionStorage.setItem(TOKEN_KEY, token);
      return api(path, options);
    }
  }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

// A token handed over as #token=... stays out of server logs and history.
function takeTokenFromFragment() {
  const match = location.hash.match(/token=([^&]+)/);
  if (!match) return;
  token = decodeURIComponent(match[1]);
  sessionStorage.setItem(TOKEN_KEY, token);
  history.replaceState(null, "", location.pathname + location.search);
}

function fillSelect(select, entries, chosen) {
  select.replaceChildren();
  for (const { value, label } of entries) select.add(new Option(label, value));
  select.add(new Option("Other…", OTHER));
  if (chosen) choose(select, chosen);
  select.dataset.previous = select.value;
}

function choose(select, id) {
  if (![...select.options].some((option) => option.value === id)) {
    select.add(new Option(id, id), select.options.length - 1);
  }
  select.value = id;
}

function chosenPair() {
  const personality = personalitySelect.value;
  const user = userSelect.value;
  return personality !== OTHER && user !== OTHER ? { personality, user } : null;
}

function isDirty(store) {
  return panels[store].dataset.dirty === "true";
}

// Loads the chosen pair; refreshes the editors of `stores` and always the prefetch.
async function loadPair(stores) {
  const pair = chosenPair();
  if (!pair) return;
  const request = { ...pair };
  const query = $("#query").value.trim();
  if (query && !$("#recall").hidden) request.query = query;
  try {
    const view = await api("/v1/prefetch", { method: "POST", body: JSON.stringify(request) });
    for (const store of stores) show(store, view[store]);
    await loadNotes();
    $("#prefetch").textContent =
      view.context ?? "(nothing remembered yet: the agent gets no memory section)";
    const warnings = $("#prefetch-warnings");
    warnings.textContent = view.warnings.join(" ");
    warnings.hidden = view.warnings.length === 0;
    const { provider, recall } = view.personality;
    $("#recall").hidden = !recall;
    $("#provider").textContent = `provider: ${provider}${recall ? " (recall)" : ""}`;
    history.replaceState(null, "", `?${new URLSearchParams(pair)}${location.hash}`);
    problem("");
  } catch (err) {
    problem(err.message);
  }
}

function show(store, doc) {
  const panel = panels[store];
  loaded[store] = doc;
  panel.querySelector("h2").textContent = doc.path;
  const bytes = new TextEncoder().encode(doc.text).length;
  const rows = [
    ["Path", doc.path],
    ["Location", doc.location],
    ["Version", doc.version ?? "none yet"],
    ["Modified", doc.modified ? new Date(doc.modified).toLocaleString() : "never written"],
    ["Size", `${bytes} bytes${doc.caps ? describeCaps(doc.caps) : ""}`],
  ];
  panel.querySelector("dl").replaceChildren(
    ...rows.flatMap(([term, value]) => {
      const dt = document.createElement("dt");
      const dd = document.createElement("dd");
      dt.textContent = term;
      dd.textContent = value;
      return [dt, dd];
    }),
  );
  panel.querySelector("textarea").value = doc.text;
  panel.dataset.path = doc.path;
  panel.dataset.dirty = "false";
  status(store, "", "");
  if (panel.querySelector(".history").open) loadHistory(store);
}

// Lists the shown document's revisions, newest first, each with its diff and a revert button.
async function loadHistory(store) {
  const panel = panels[store];
  const path = panel.dataset.path;
  const note = panel.querySelector(".history-note");
  try {
    const view = await api(`${historyRoute(store, "revisions")}?diff=true`);
    // Another document was shown meanwhile: this answer is not about it.
    if (panel.dataset.path !== path) return;
    const current = loaded[store]?.version;
    panel.querySelector(".revisions").replaceChildren(
      ...view.revisions.map((revision, index) =>
        revisionItem(store, revision, current, view.revisions[index + 1])),
    );
    note.textContent = view.revisions.length === 0
      ? "No revisions recorded yet."
      : view.next_before ? `The newest ${view.revisions.length} revisions; older ones are kept too.` : "";
  } catch (err) {
    note.textContent = `History not loaded: ${err.message}`;
  }
}

// One revision of the history; `previous` is the one listed after it (older), if any.
function revisionItem(store, revision, current, previous) {
  const item = $("#revision").content.firstElementChild.cloneNode(true);
  item.dataset.number = revision.number;
  item.querySelector(".number").textContent = `#${revision.number}`;
  const time = item.querySelector("time");
  time.dateTime = new Date(revision.time).toISOString();
  time.textContent = new Date(revision.time).toLocaleString();
  item.querySelector(".surface").textContent = revision.tombstone ? "purged" : revision.surface;
  // A redaction keeps when, where and how much, never what: its text and updates are gone.
  const redacted = revision.redacted_at != null;
  if (redacted) {
    item.classList.add("redacted");
    const label = document.createElement("span");
    label.className = "redacted-label";
    label.textContent = "redacted";
    label.title = `Its text and changes were erased ${new Date(revision.redacted_at).toLocaleString()}.`;
    item.querySelector(".surface").after(label);
  }
  const who = [revision.personality, revision.user].filter(Boolean).join(" / ");
  const details = [
    who,
    `${revision.bytes_before} → ${revision.bytes_after} bytes`,
    (revision.updates ?? []).map((update) => update.action).join(", "),
  ];
  item.querySelector(".detail").textContent = details.filter(Boolean).join(" · ");
  const button = item.querySelector(".revert");
  if (revision.tombstone || redacted || revision.version === current) {
    // Nothing to restore from a purge or a redaction; the current text needs no restoring.
    button.remove();
    if (!revision.tombstone && !redacted) item.querySelector(".detail").textContent += " · current";
  } else {
    button.addEventListener("click", () => revert(store, revision.number, button));
  }
  const changes = item.querySelector(".changes");
  if (redacted) {
    // No text to show or compare: the changes panel goes, as the revert button did.
    changes.replaceWith(note("Redacted: its text and changes were erased."));
  } else if (revision.diff) {
    showDiff(item.querySelector(".diff"), revision.diff);
  } else if (revision.oldest_kept) {
    changes.replaceChildren(note("The oldest revision kept: earlier ones were pruned."));
  } else if (revision.tombstone) {
    changes.replaceChildren(note("Purged: its text and older revisions were erased."));
  } else if (previous?.redacted_at != null) {
    changes.replaceChildren(note("The revision before it was redacted: nothing to compare it with."));
  } else {
    changes.replaceChildren(note("No change in the text."));
  }
  return item;
}

function note(text) {
  const line = document.createElement("p");
  line.className = "meta";
  line.textContent = text;
  return line;
}

// A unified diff as text, one line per span so added and removed lines can be coloured.
function showDiff(pre, diff) {
  const lines = diff.split("\n");
  if (lines.at(-1) === "") lines.pop();
  pre.replaceChildren(
    ...lines.map((line) => {
      const span = document.createElement("span");
      span.textContent = `${line}\n`;
      if (line.startsWith("@@")) span.className = "hunk";
      else if (line.startsWith("+") && !line.startsWith("+++")) span.className = "added";
      else if (line.startsWith("-") && !line.startsWith("---")) span.className = "removed";
      return span;
    }),
  );
}

async function revert(store, number, button) {
  const pair = chosenPair();
  const doc = loaded[store];
  if (!pair || !doc) return;
  const question = isDirty(store)
    ? `Revert ${doc.path} to revision #${number} and discard your unsaved edit?`
    : `Revert ${doc.path} to revision #${number}?`;
  if (!window.confirm(question)) return;
  button.disabled = true;
  try {
    const report = await api(historyRoute(store, "revert"), {
      method: "POST",
      headers: { "If-Match": `"${doc.version}"` },
      body: JSON.stringify({ number, surface: "web" }),
    });
    await refresh(store);
    const advice = report.over_soft_cap ? "; it is over its soft cap, consolidate it soon" : "";
    status(store, report.written ? `Reverted to #${number}${advice}.` : "Nothing changed.", "ok");
  } catch (err) {
    if (err.kind === "precondition-failed") {
      // The page showed an older version: show the new one, then say why nothing happened.
      await refresh(store);
      const message = `Not reverted: ${doc.path} changed since you loaded it. `
        + "It is reloaded now: check its history again before reverting.";
      status(store, message, "error");
    } else {
      status(store, `Not reverted: ${err.message}`, "error");
      button.disabled = false;
    }
  }
}

function describeCaps(caps) {
  const parts = [];
  if (caps.soft != null) parts.push(`soft cap ${caps.soft}`);
  if (caps.hard != null) parts.push(`hard cap ${caps.hard}`);
  return parts.length ? ` (${parts.join(", ")})` : "";
}

function status(store, message, tone) {
  const line = panels[store].querySelector(".status");
  line.textContent = message;
  line.className = `status ${tone}`;
}

function problem(message) {
  $("#problem").textContent = message;
  $("#problem").hidden = !message;
}

// The update a save of editor `key` sends, and the version it is guarded by.
function saving(key, text) {
  if (key !== "note") {
    const update = { action: "replace", store: key, content: text };
    return { updates: [update], if_match: { [key]: loaded[key].version } };
  }
  const { store, path, creating } = opened;
  const action = creating ? "create" : "replace";
  const update = { action, store, note: path, content: text };
  return creating
    ? { updates: [update] }
    : { updates: [update], if_match: { notes: { [store]: { [path]: loaded.note.version } } } };
}

// The sync of `updates` for the chosen pair, from the page: the personality's scope and caps
// apply, as to the agent's own writes.
function sync(body) {
  return api("/v1/sync", {
    method: "POST",
    body: JSON.stringify({ ...chosenPair(), ...body, surface: "web" }),
  });
}

// What editor `key` shows, read again: the note from its route, the pair with the prefetch.
async function refresh(key) {
  if (key === "note") {
    await openNote(opened.store, opened.path);
    await loadPair([]);
  } else {
    await loadPair([key]);
  }
}

async function save(store) {
  const pair = chosenPair();
  const doc = loaded[store];
  if (!pair || !doc) return;
  const panel = panels[store];
  const button = panel.querySelector(".save");
  button.disabled = true;
  try {
    const report = await sync(saving(store, panel.querySelector("textarea").value));
    const written = report.documents[0];
    if (store === "note") opened.creating = false;
    await refresh(store);
    const advice = written?.over_soft_cap ? "; it is over its soft cap, consolidate it soon" : "";
    status(store, written?.written ? `Saved${advice}.` : "Nothing changed.", "ok");
  } catch (err) {
    const message =
      err.kind === "precondition-failed"
        ? `Not saved: ${doc.path} changed since you loaded it. Copy your edit, press Reload to see the new text, then make your change again.`
        : `Not saved: ${err.message}`;
    status(store, message, "error");
  } finally {
    button.disabled = false;
  }
}

// Lists the notes beside each document of the pair, each a button that opens it.
async function loadNotes() {
  for (const store of STORES) {
    const list = $(`.note-list[data-store="${store}"] ul`);
    const page = await api(`/v1/documents/${scopeOf(store)}notes`);
    list.replaceChildren(
      ...page.notes.map((listed) => {
        const item = document.createElement("li");
        const open = document.createElement("button");
        open.type = "button";
        open.className = "open-note";
        open.textContent = listed.path;
        open.addEventListener("click", () => openNote(store, listed.path));
        const about = document.createElement("span");
        about.className = "meta";
        about.textContent = ` ${listed.bytes} bytes${listed.description ? ` · ${listed.description}` : ""}`;
        item.append(open, about);
        return item;
      }),
    );
    if (page.notes.length === 0) {
      const none = document.createElement("li");
      none.className = "meta";
      none.textContent = "No notes yet.";
      list.replaceChildren(none);
    }
  }
}

// Shows a note of `store`'s scope in the note editor.
async function openNote(store, path) {
  if (isDirty("note") && opened?.path !== path && !window.confirm("Discard your unsaved edit?")) {
    return;
  }
  try {
    const doc = await api(noteRoute(store, path));
    opened = { store, path, creating: false };
    panels.note.hidden = false;
    show("note", doc);
  } catch (err) {
    if (err.status === 404 && opened?.path === path) closeNote();
    notesStatus(`${path}: ${err.message}`, "error");
  }
}

function closeNote() {
  opened = null;
  loaded.note = null;
  panels.note.hidden = true;
  panels.note.dataset.path = "";
  panels.note.dataset.dirty = "false";
}

// A new note of `store`'s scope, at a path the person gives: written on its first save.
function newNote(store) {
  const path = window.prompt("Path of the new note (for example projects/kyoto.md):")?.trim();
  if (!path || !chosenPair()) return;
  opened = { store, path, creating: true };
  panels.note.hidden = false;
  show("note", {
    path: `${scopeOf(store)}notes/${path}`,
    text: "",
    version: null,
    location: "not written yet",
    modified: null,
  });
  panels.note.querySelector("textarea").focus();
}

async function renameNote() {
  if (!opened || opened.creating) return;
  const { store, path } = opened;
  const to = window.prompt(`Move ${path} to:`, path)?.trim();
  if (!to || to === path) return;
  try {
    await sync({
      updates: [{ action: "rename", store, note: path, to }],
      if_match: { notes: { [store]: { [path]: loaded.note.version } } },
    });
    await openNote(store, to);
    await loadPair([]);
    notesStatus(`Moved ${path} to ${to}.`, "ok");
  } catch (err) {
    status("note", `Not moved: ${err.message}`, "error");
  }
}

async function deleteNote() {
  if (!opened) return;
  const { store, path, creating } = opened;
  if (creating) return closeNote();
  if (!window.confirm(`Delete ${path}? Its history keeps it: a revert brings it back.`)) return;
  try {
    await sync({
      updates: [{ action: "delete", store, note: path }],
      if_match: { notes: { [store]: { [path]: loaded.note.version } } },
    });
    closeNote();
    await loadPair([]);
    notesStatus(`Deleted ${path}.`, "ok");
  } catch (err) {
    const message = err.kind === "precondition-failed"
      ? `Not deleted: ${path} changed since you loaded it; press Reload to see it.`
      : `Not deleted: ${err.message}`;
    status("note", message, "error");
  }
}

function notesStatus(message, tone) {
  const line = $("#notes-status");
  line.textContent = message;
  line.className = `status ${tone}`;
}

async function reload(store) {
  if (isDirty(store) && !window.confirm("Discard your unsaved edit?")) return;
  if (store === "note" && opened?.creating) return closeNote();
  await refresh(store);
}

// A dropdown change; "Other…" asks for an id (the server validates it).
async function picked(select, label, stores) {
  if (select.value === OTHER) {
    const id = window.prompt(`${label} id (letters, digits, '_' or '-'):`)?.trim();
    if (!id) {
      select.value = select.dataset.previous;
      return;
    }
    choose(select, id);
  }
  const losing = [...stores, "note"].filter(isDirty);
  if (losing.length && !window.confirm("Discard your unsaved edit?")) {
    select.value = select.dataset.previous;
    return;
  }
  select.dataset.previous = select.value;
  closeNote();
  await loadPair(stores);
}

async function start() {
  takeTokenFromFragment();
  for (const store of [...STORES, "note"]) {
    const panel = panels[store];
    panel.querySelector(".save").addEventListener("click", () => save(store));
    panel.querySelector(".reload").addEventListener("click", () => reload(store));
    panel.querySelector(".history").addEventListener("toggle", (event) => {
      if (event.target.open && panel.dataset.path) loadHistory(store);
    });
    panel.querySelector("textarea").addEventListener("input", () => {
      panel.dataset.dirty = "true";
      status(store, "Unsaved changes.", "");
    });
  }
  panels.note.querySelector(".rename").addEventListener("click", renameNote);
  panels.note.querySelector(".delete").addEventListener("click", deleteNote);
  for (const store of STORES) {
    $(`.note-list[data-store="${store}"] .new-note`).addEventListener("click", () => newNote(store));
  }
  personalitySelect.addEventListener("change", () =>
    // The personality decides the provider, so both editors follow it.
    picked(personalitySelect, "Personality", STORES),
  );
  userSelect.addEventListener("change", () => picked(userSelect, "User", ["user"]));
  $("#recall").addEventListener("submit", (event) => {
    event.preventDefault();
    loadPair([]);
  });
  window.addEventListener("beforeunload", (event) => {
    if ([...STORES, "note"].some(isDirty)) event.preventDefault();
  });

  try {
    const [personalities, users] = await Promise.all([
      api("/v1/personalities?limit=500"),
      api("/v1/users?limit=500"),
    ]);
    const wanted = new URLSearchParams(location.search);
    fillSelect(
      personalitySelect,
      personalities.items.map((p) => ({
        value: p.id,
        label: `${p.id} (${p.provider}${p.scope === "global" ? ", global memory" : ""})`,
      })),
      wanted.get("personality") ?? personalities.default ?? personalities.items[0]?.id,
    );
    fillSelect(
      userSelect,
      users.items.map(({ id }) => ({ value: id, label: id })),
      wanted.get("user") ?? users.default ?? users.items[0]?.id,
    );
    if (!chosenPair()) {
      problem("Nothing is remembered yet: pick Other… to type a personality or user id.");
      return;
    }
    await loadPair(STORES);
  } catch (err) {
    problem(err.message);
  }
}

start();
