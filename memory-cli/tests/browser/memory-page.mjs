// Drives the Memory page in headless Chromium, as a person would, for memory-cli/tests/page.rs:
// pick a personality and a user, edit MEMORY.md and save; then edit USER.md while the agent
// writes to it (through `memory sync`) and check that the stale save is refused and a reload
// shows the agent's write; then open MEMORY.md's history, read a diff, revert to the text it had
// before the edit, and check that a revert over a newer agent write is refused and reloads.
// Then the notes: create one beside MEMORY.md, see it listed and in the prefetch, have its save
// refused over an agent's write, read its history and revert, rename it, delete it. Last, a
// revision of USER.md redacted with `memory redact` is listed without its text, revert or diff.
//
// Env: MEMORY_PAGE_URL, MEMORY_BIN, MEMORY_CONFIG, CHROMIUM, EDITED_MEMORY; SCREENSHOT (a PNG
// path, optional).

import { execFileSync } from "node:child_process";
import { chromium } from "playwright-core";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const url = env("MEMORY_PAGE_URL");
const edited = env("EDITED_MEMORY");
const agentWrite = "Agent: she asked for the slides by Friday.";
const agentMemoryWrite = "Agent: the review moved to Tuesdays.";

function check(condition, message) {
  if (!condition) throw new Error(message);
}

// The flags that keep Chromium off a closed network and runnable as root.
const browser = await chromium.launch({
  executablePath: env("CHROMIUM"),
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.setDefaultTimeout(60_000);
  // A prompt gets the answer the step sets; a confirm is accepted.
  let answer = "";
  page.on("dialog", (dialog) => (dialog.type() === "prompt" ? dialog.accept(answer) : dialog.accept()));
  const failures = [];
  page.on("pageerror", (err) => failures.push(err.message));

  await page.goto(url);
  await page.selectOption("#personality", "ada");
  await page.selectOption("#user", "grace");
  const memoryPanel = page.locator('section[data-store="memory"][data-path="personalities/ada/MEMORY.md"]');
  const userPanel = page.locator('section[data-store="user"][data-path="users/grace/USER.md"]');
  await memoryPanel.waitFor();
  await userPanel.waitFor();
  const before = await memoryPanel.locator("textarea").inputValue();
  check(before.includes("Lovelase"), `MEMORY.md did not load its text: ${JSON.stringify(before)}`);
  const location = await memoryPanel.locator("dl").innerText();
  check(location.includes("personalities/ada/MEMORY.md") && location.includes("Version"),
    `MEMORY.md's location and version are not shown: ${location}`);

  // Edit MEMORY.md and save: the agent's next prefetch shows it.
  await memoryPanel.locator("textarea").fill(edited);
  await memoryPanel.locator(".save").click();
  await memoryPanel.locator(".status.ok", { hasText: "Saved." }).waitFor();
  await page.locator("#prefetch", { hasText: edited.split("\n")[0] }).waitFor();

  // Edit USER.md while the agent writes to it: the save must be refused, not applied.
  const userText = userPanel.locator("textarea");
  await userText.fill(`${await userText.inputValue()}\nPrefers tea.`);
  execFileSync(env("MEMORY_BIN"), ["--config", env("MEMORY_CONFIG"), "sync",
    "--personality", "ada", "--user", "grace"], {
    input: JSON.stringify([{ action: "add", store: "user", content: agentWrite }]),
    stdio: ["pipe", "ignore", "inherit"],
  });
  await userPanel.locator(".save").click();
  await userPanel.locator(".status.error", { hasText: "changed since you loaded it" }).waitFor();
  if (process.env.SCREENSHOT) await page.screenshot({ path: process.env.SCREENSHOT });

  await userPanel.locator(".reload").click();
  await page.waitForFunction(
    (text) => document.querySelector('section[data-store="user"] textarea').value.includes(text),
    agentWrite,
  );
  const reloaded = await userText.inputValue();
  check(!reloaded.includes("Prefers tea."), "the refused edit was written after all");

  // MEMORY.md's history: #1 the seeded text (written by hand), #2 the page's save (current).
  await memoryPanel.locator(".history > summary").click();
  const revision = (number) => memoryPanel.locator(`li.revision[data-number="${number}"]`);
  await revision(2).waitFor();
  const saveHead = await revision(2).locator(".revision-head").innerText();
  check(saveHead.includes("web") && saveHead.includes("current"),
    `the page's save is not listed as the current web revision: ${saveHead}`);
  check(await revision(2).locator(".revert").count() === 0, "the current revision offers a revert");
  check((await revision(1).locator(".revision-head").innerText()).includes("external"),
    "the seeded text is not listed as an external revision");
  await revision(2).locator(".changes > summary").click();
  const diff = revision(2).locator(".diff");
  await diff.locator(".removed", { hasText: "Lovelase" }).waitFor();
  await diff.locator(".added", { hasText: "Lovelace" }).waitFor();
  // Stored text is shown as text, never as markup.
  check((await diff.innerText()).includes("<b>not bold</b>") && await diff.locator("b").count() === 0,
    "the diff rendered stored text as HTML");

  // Revert to #1: the seeded text is back, and the revert is revision #3, from the web.
  await revision(1).locator(".revert").click();
  await memoryPanel.locator(".status.ok", { hasText: "Reverted to #1." }).waitFor();
  check((await memoryPanel.locator("textarea").inputValue()).includes("Lovelase"),
    "the revert did not bring the seeded text back");
  await page.locator("#prefetch", { hasText: "Lovelase" }).waitFor();
  await revision(3).waitFor();
  check((await revision(3).locator(".surface").innerText()) === "web", "the revert is not from the web");

  // The agent writes while the page shows #3: reverting to #2 now must be refused, not applied.
  execFileSync(env("MEMORY_BIN"), ["--config", env("MEMORY_CONFIG"), "sync",
    "--personality", "ada", "--user", "grace"], {
    input: JSON.stringify([{ action: "add", store: "memory", content: agentMemoryWrite }]),
    stdio: ["pipe", "ignore", "inherit"],
  });
  await revision(2).locator(".revert").click();
  await memoryPanel.locator(".status.error", { hasText: "changed since you loaded it" }).waitFor();
  await page.waitForFunction(
    (text) => document.querySelector('section[data-store="memory"] textarea').value.includes(text),
    agentMemoryWrite,
  );
  // A new note beside MEMORY.md: listed once saved, and in what the agent sees.
  answer = "trips/kyoto.md";
  await page.locator('.note-list[data-store="memory"] .new-note').click();
  const notePanel = page.locator('section[data-store="note"]');
  await notePanel.locator("textarea").fill("# Kyoto\nTemples at dawn.");
  await notePanel.locator(".save").click();
  await notePanel.locator(".status.ok", { hasText: "Saved." }).waitFor();
  const listed = page.locator('.note-list[data-store="memory"] .open-note', { hasText: "trips/kyoto.md" });
  await listed.waitFor();
  await page.locator("#prefetch", { hasText: "trips/kyoto.md" }).waitFor();
  await notePanel.locator("dl", { hasText: "personalities/ada/notes/trips/kyoto.md" }).waitFor();

  // The agent adds to the note while the page has an edit of its own: refused, then reloaded.
  execFileSync(env("MEMORY_BIN"), ["--config", env("MEMORY_CONFIG"), "sync",
    "--personality", "ada", "--user", "grace"], {
    input: JSON.stringify([{ action: "add", store: "memory", note: "trips/kyoto.md", content: "Agent: moss garden." }]),
    stdio: ["pipe", "ignore", "inherit"],
  });
  await notePanel.locator("textarea").fill("# Kyoto\nOverwritten.");
  await notePanel.locator(".save").click();
  await notePanel.locator(".status.error", { hasText: "changed since you loaded it" }).waitFor();
  await notePanel.locator(".reload").click();
  await page.waitForFunction(
    () => document.querySelector('section[data-store="note"] textarea').value.includes("moss garden"),
  );

  // Its history: #1 the page's create, #2 the agent's add (current); revert to #1.
  await notePanel.locator(".history > summary").click();
  const noteRevision = (number) => notePanel.locator(`li.revision[data-number="${number}"]`);
  await noteRevision(2).waitFor();
  check((await noteRevision(1).locator(".surface").innerText()) === "web", "the note's create is not from the web");
  await noteRevision(1).locator(".revert").click();
  await notePanel.locator(".status.ok", { hasText: "Reverted to #1." }).waitFor();
  check(!(await notePanel.locator("textarea").inputValue()).includes("moss garden"),
    "the note's revert did not bring its first text back");

  // Renamed, then deleted: the list follows, and the file with it.
  answer = "travel/kyoto.md";
  await notePanel.locator(".rename").click();
  await page.locator('.note-list[data-store="memory"] .open-note', { hasText: "travel/kyoto.md" }).waitFor();
  await notePanel.locator("dl", { hasText: "personalities/ada/notes/travel/kyoto.md" }).waitFor();
  check(await listed.count() === 0, "the old path is still listed after the rename");
  await notePanel.locator(".delete").click();
  await page.locator("#notes-status", { hasText: "Deleted travel/kyoto.md." }).waitFor();
  check(await notePanel.isHidden(), "the note editor stays open on a deleted note");
  await page.locator('.note-list[data-store="memory"] li', { hasText: "No notes yet." }).waitFor();

  // USER.md's seeded text (#1, by hand), redacted: listed, labelled, with nothing to revert to
  // or compare; the agent's write after it (#2, current) has nothing to compare with either.
  execFileSync(env("MEMORY_BIN"), ["--config", env("MEMORY_CONFIG"), "redact",
    "users/grace/USER.md", "1", "--yes"], { stdio: ["ignore", "ignore", "inherit"] });
  await userPanel.locator(".history > summary").click();
  const userRevision = (number) => userPanel.locator(`li.revision[data-number="${number}"]`);
  await userRevision(1).locator(".redacted-label", { hasText: "redacted" }).waitFor();
  check(await userRevision(1).locator(".revert").count() === 0, "a redacted revision offers a revert");
  check(await userRevision(1).locator(".changes").count() === 0, "a redacted revision offers its changes");
  check((await userRevision(1).innerText()).includes("its text and changes were erased"),
    "a redacted revision does not say its text is gone");
  check((await userRevision(2).locator(".changes").textContent()).includes("before it was redacted"),
    "the revision after a redacted one does not say why it has no diff");

  check(failures.length === 0, `the page threw: ${failures.join("; ")}`);
  console.log("memory-page: edit saved, stale save refused, reload shows the agent's write; "
    + "history shows the diff, revert restores, a stale revert is refused and reloads; "
    + "a note created, listed, refused over the agent's write, reverted, renamed and deleted; "
    + "a redacted revision listed without its text, revert or diff");
} finally {
  await browser.close();
}
