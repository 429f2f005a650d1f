// somnid's memory browser: plain JavaScript over the /v1 API, no build step, no CDN.
// The login cookie (HttpOnly, SameSite=Strict) and the page key the login answers with
// authorise every request: the key, kept in this origin's storage (its port included),
// goes with each one as X-Somnid-UI. The cookie alone, which the browser also sends to
// every other service on 127.0.0.1, opens nothing.
"use strict";

const T = {
  en: {
    title: "somnid memory", memories: "Memories", search: "Search", intentions: "Intentions",
    dreams: "Dreams", logout: "Log out", token_label: "Token (`somnid token` prints it)",
    login: "Log in", kind: "Kind", scope: "Scope", live: "live", archived: "archived",
    filter: "filter", description: "Description", body: "Text", fields: "Fields (JSON)",
    save: "Save", archive: "Archive", restore: "Restore", reload: "Reload",
    conflict: "Changed since you opened it (412): reload to see the current version.",
    purge_label: "Type the name to delete it for good", purge_history: "also from history",
    purge: "Purge", query: "query", project: "project (scope)", revert: "Revert this dream",
    saved: "Saved.", archived_done: "Archived.", restored: "Restored.", purged: "Purged.",
    reverted: "Reverted: the files are as they were before the dream.",
    revert_refused: "Refused: a later change touched", bad_token: "That is not the token.",
    awake: "awake", sleeping: "sleeping", no_results: "No results.", empty: "Nothing here.",
    conversation: "conversation", more: "The first {n} of {total}: type a filter to find the others.",
    older: "The newest {n} of {total}: show older ones",
    purge_live_too: "A live entry has this name, and a purge deletes the name everywhere: purge it from the live view, or rename one of them first.",
    due: "due", bad_json: "Fields must be a JSON object.", event: "last event",
    kind_knowledge: "knowledge", kind_episode: "episode", kind_intention: "intention",
    kind_skill: "skill", kind_profile: "profile", show_history: "History", history: "History",
    revert_change: "Revert this change", no_history: "No history yet.",
    change_reverted: "Reverted: the entry is as it was before that change.",
    entry_gone: "Reverted: that change created the entry, so it is gone.",
    identity: "Identity", only_dreams: "only dreams", reverted_by: "reverted by",
    identity_intro: "Every change to a profile: who the agent is (about_me) and who each user is. Dreams write these from conversations; undo any you do not want.",
    identity_reverted: "Reverted: the profile is as it was before that change.",
    purge_logs: "also scrub its text from the conversation logs",
    purging: "Rewriting {n} commits of history, about {s} s ({done} done)…",
    sync: "Sync", sync_now: "Sync now", syncing: "Syncing…", synced: "Synced.", sync_off: "Sync is off",
    sync_state: "State", sync_remote: "Remote", sync_machine: "This machine", sync_last_pull: "Last pull",
    sync_last_push: "Last push", sync_ahead_behind: "Ahead / behind", sync_last_error: "Last error",
    never: "never", state_off: "off", state_idle: "idle", state_running: "running", state_failed: "failed",
    ahead_behind: "{a} to push · {b} fetched, not merged",
    sync_conflicts: "Conflicts", no_conflicts: "No conflict.",
    sync_conflicts_intro: "A text both machines changed on the same lines: the entry kept this machine's version, the other machine's is kept beside it until you choose.",
    this_version: "This machine's (in the entry)", other_version: "The other machine's", no_entry_file: "(the entry file is gone)",
    merged_on_intro: "Merged on {m}: the entry kept {m}'s version, and the remote's at that merge (this machine's, if it had sent it) is set aside.",
    entry_version_of: "In the entry: {m}'s version", aside_version: "Set aside by the merge on {m}",
    keep_entry: "Keep the entry's", take_aside: "Take the set-aside one",
    keep_this: "Keep this machine's", take_other: "Take the other",
    kept_this: "Settled: the entry keeps this machine's version.", took_other: "Settled: the entry now holds the other machine's version.",
    kept_entry: "Settled: the entry keeps its version.", took_aside: "Settled: the entry now holds the version that was set aside.",
    broken_intro: "Files somnid cannot read are left alone, as they are, until fixed by hand:",
    discard_edits: "This entry has changes you have not saved. Discard them?",
  },
  zh: {
    title: "somnid 记忆", memories: "记忆", search: "搜索", intentions: "待办意图",
    dreams: "梦境", logout: "退出", token_label: "令牌（`somnid token` 可显示）",
    login: "登录", kind: "类型", scope: "范围", live: "当前", archived: "已归档",
    filter: "筛选", description: "描述", body: "正文", fields: "字段（JSON）",
    save: "保存", archive: "归档", restore: "恢复", reload: "重新载入",
    conflict: "打开后已被修改（412）：请重新载入查看最新版本。",
    purge_label: "输入名称以永久删除", purge_history: "同时从历史中删除",
    purge: "永久删除", query: "查询", project: "项目（范围）", revert: "撤销这次梦境",
    saved: "已保存。", archived_done: "已归档。", restored: "已恢复。", purged: "已永久删除。",
    reverted: "已撤销：文件已恢复到梦境之前的样子。",
    revert_refused: "已拒绝：之后的修改涉及", bad_token: "令牌不正确。",
    awake: "清醒", sleeping: "睡眠中", no_results: "没有结果。", empty: "这里什么也没有。",
    conversation: "对话", more: "只显示了 {total} 条中的前 {n} 条：输入筛选词查找其余的。",
    older: "显示了 {total} 条中最新的 {n} 条：显示更早的",
    purge_live_too: "当前条目中有同名的一条，而永久删除会删去所有同名条目：请在当前视图中删除，或先给其中一条改名。",
    due: "截止", bad_json: "字段必须是 JSON 对象。", event: "最近事件",
    kind_knowledge: "知识", kind_episode: "经历", kind_intention: "意图",
    kind_skill: "技能", kind_profile: "档案", show_history: "历史", history: "历史",
    revert_change: "撤销这次修改", no_history: "还没有历史。",
    change_reverted: "已撤销：条目已恢复到那次修改之前。",
    entry_gone: "已撤销：那次修改创建了这个条目，所以它已不存在。",
    identity: "身份", only_dreams: "只看梦境", reverted_by: "已被撤销：",
    identity_intro: "对档案的每一次修改：助手是谁（about_me）、每位用户是谁。梦境会根据对话写入这些内容；不想要的修改可以撤销。",
    identity_reverted: "已撤销：档案已恢复到那次修改之前。",
    purge_logs: "同时从对话记录中抹去其文字",
    purging: "正在改写 {n} 个历史提交，约 {s} 秒（已完成 {done}）…",
    sync: "同步", sync_now: "立即同步", syncing: "正在同步…", synced: "已同步。", sync_off: "同步已关闭",
    sync_state: "状态", sync_remote: "远程仓库", sync_machine: "本机", sync_last_pull: "上次拉取",
    sync_last_push: "上次推送", sync_ahead_behind: "领先 / 落后", sync_last_error: "上次错误",
    never: "从未", state_off: "关闭", state_idle: "空闲", state_running: "同步中", state_failed: "失败",
    ahead_behind: "{a} 个待推送 · {b} 个已拉取未合并",
    sync_conflicts: "冲突", no_conflicts: "没有冲突。",
    sync_conflicts_intro: "两台机器改动了同一段文字：条目保留了本机的版本，另一台机器的版本存放在旁边，等你选择。",
    this_version: "本机的版本（条目中）", other_version: "另一台机器的版本", no_entry_file: "（条目文件已不存在）",
    merged_on_intro: "在 {m} 上合并：条目保留了 {m} 的版本，合并时远端的版本（若本机已推送，则是本机的）存放在旁边。",
    entry_version_of: "条目中：{m} 的版本", aside_version: "{m} 合并时存放在旁边的版本",
    keep_entry: "保留条目中的", take_aside: "采用旁边的",
    keep_this: "保留本机的", take_other: "采用另一台的",
    kept_this: "已解决：条目保留本机的版本。", took_other: "已解决：条目现在是另一台机器的版本。",
    kept_entry: "已解决：条目保留原有版本。", took_aside: "已解决：条目现在是存放在旁边的版本。",
    broken_intro: "somnid 读不了的文件原样保留，等人手工修好：",
    discard_edits: "这个条目有尚未保存的修改。要放弃它们吗？",
  },
};
const CORE = ["name", "description", "stability", "score", "created", "last_used", "last_decay",
  "archived_at", "archive_reason", "archived_from", "restored_at"];  // somnid keeps these
let lang = localStorage.getItem("somnid-lang") || (navigator.language.startsWith("zh") ? "zh" : "en");
let current = null; // the entry open in the editor
let events = null;
let syncStatus = null; // the last sync status shown

const $ = (id) => document.getElementById(id);
const t = (key) => (T[lang] && T[lang][key]) || T.en[key] || key;
const kindName = (kind) => t(`kind_${kind}`);

// A message in a status line: green when it went well, red when it did not.
function say(node, text, bad = false) {
  node.textContent = text;
  node.classList.toggle("error", bad);
}

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  if (props.onclick && tag !== "button") pressable(node);
  for (const child of children) node.append(child);
  return node;
}

// A list item that opens something is reached with Tab and opened with Enter or Space, as a
// button is: without a mouse no entry, dream or search result could be opened.
function pressable(node) {
  node.tabIndex = 0;
  node.setAttribute("role", "button");
  node.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      node.click();
    }
  });
}

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.detail) || `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

const KEY = "somnid-ui-key";

async function api(method, path, body, headers = {}) {
  const init = { method, credentials: "same-origin", headers: { ...headers } };
  init.headers["X-Somnid-UI"] = localStorage.getItem(KEY) || "1"; // "1": the login itself
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (response.status === 401 && path !== "/ui/login") showLogin();
  if (!response.ok) throw new ApiError(response.status, data);
  return { data, response };
}

function translate() {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  document.querySelectorAll("[data-t]").forEach((node) => { node.textContent = t(node.dataset.t); });
  document.querySelectorAll("[data-tp]").forEach((node) => { node.placeholder = t(node.dataset.tp); });
  $("lang").value = lang;
  $("cjk-note").hidden = lang !== "zh" || cjkRenders();
  if (current) $("e-title").textContent = `${kindName(current.kind)} / ${current.name}`;
  if (syncStatus) paintSync(syncStatus);
  paintSleep();
}

// Whether this machine has a font for Chinese: without one, a Chinese character is drawn
// as the same "missing glyph" box as a code point no font has.
function cjkRenders() {
  const canvas = document.createElement("canvas");
  canvas.width = 48; canvas.height = 48;
  const ctx = canvas.getContext("2d");
  if (!ctx) return true;
  ctx.font = `32px ${getComputedStyle(document.body).fontFamily}`;
  const draw = (text) => {
    ctx.clearRect(0, 0, 48, 48);
    ctx.fillText(text, 4, 38);
    return ctx.getImageData(0, 0, 48, 48).data.join(",");
  };
  return draw("记") !== draw("\u{10FFFD}");
}

// --- login ---------------------------------------------------------------------------

function showLogin() {
  localStorage.removeItem(KEY);
  for (const id of ["tabs", "logout", "sleep"]) $(id).hidden = true;
  document.querySelectorAll(".view").forEach((v) => { v.hidden = true; });
  $("login").hidden = false;
  if (events) { events.close(); events = null; }
}

async function login(event) {
  event.preventDefault();
  try {
    localStorage.removeItem(KEY);
    const { data } = await api("POST", "/ui/login", { token: $("token").value });
    localStorage.setItem(KEY, data.key);
    $("token").value = "";
    $("login-error").hidden = true;
    start();
  } catch (error) {
    $("login-error").textContent = error.status === 401 ? t("bad_token") : error.message;
    $("login-error").hidden = false;
  }
}

async function start() {
  try {
    await api("GET", "/v1/memories?limit=1");
  } catch (error) {
    if (error.status === 401) return showLogin();
  }
  $("login").hidden = true;
  for (const id of ["tabs", "logout", "sleep"]) $(id).hidden = false;
  show(location.hash.slice(1) || "memories");
  watchSleep();
}

// --- tabs ----------------------------------------------------------------------------

function show(tab) {
  if (!$(`view-${tab}`)) tab = "memories"; // a link to a tab there is not (#bogus) showed a blank page
  document.querySelectorAll("#tabs button").forEach((b) => b.classList.toggle("on", b.dataset.tab === tab));
  document.querySelectorAll(".view").forEach((v) => { v.hidden = v.id !== `view-${tab}`; });
  history.replaceState(null, "", `#${tab}`);
  // Not a list from before (a purge may have rewritten its commits) while the new one loads.
  if (tab === "dreams") $("dreams").replaceChildren();
  ({ memories: loadList, search: () => $("q").focus(), intentions: loadAgenda, dreams: loadDreams, identity: loadIdentity, sync: loadSync }[tab] || loadList)();
}

// --- memories --------------------------------------------------------------------------

let filtering = false;
let listAsked = 0; // the newest list request: an answer to an older one (a slower, shorter filter) is dropped
let listShown = ""; // the kind and scope the list shows

async function loadList() {
  const asked = ++listAsked;
  const kind = $("kind").value;
  const archived = $("scope").value === "archived";
  // Another kind or scope: the list it showed goes at once, so no click while the new one
  // loads opens an entry of the other (a click right after "archived" opened the live one).
  if (listShown !== `${kind}/${archived}`) $("list").replaceChildren();
  // The archived alone (asked for with the live, they came after 500 live ones: none shown).
  const params = new URLSearchParams({ kind, limit: "500", archivedOnly: String(archived) });
  if ($("filter").value) params.set("text", $("filter").value);
  let data;
  try {
    ({ data } = await api("GET", `/v1/memories?${params}`));
  } catch (error) {
    if (asked === listAsked) $("list").replaceChildren(el("li", { class: "error" }, error.message));
    return;
  }
  if (asked !== listAsked) return;
  listShown = `${kind}/${archived}`;
  const items = data.items;
  const more = data.total > items.length
    ? [el("li", { class: "muted more" }, t("more").replace("{n}", items.length).replace("{total}", data.total))] : [];
  $("list").replaceChildren(...(items.length ? items.map((item) => el("li", {
    "data-name": item.name, dir: "auto",
    onclick: () => openEntry(item.kind, item.name, item.archived),
  }, item.name, el("div", { class: "muted" }, item.description || ""))) : [el("li", { class: "muted" }, t("empty"))]), ...more);
  if (!filtering) paintBroken(); // not once a keystroke: health reads the data dir
}

// Files broken by hand are listed by no listing (they do not parse): health names them.
async function paintBroken() {
  let files;
  try {
    files = (await api("GET", "/v1/health")).data.brokenFiles;
  } catch (error) {
    files = error.body && error.body.brokenFiles; // a degraded health still names them
  }
  files = files || [];
  $("broken").hidden = files.length === 0;
  $("broken").replaceChildren(el("div", { "data-t": "broken_intro" }, t("broken_intro")), el("ul", {}, ...files.map((file) =>
    el("li", { "data-path": file.path }, el("code", {}, file.path), " ", el("span", { class: "muted" }, file.reason)))));
}

// What the person typed in the editor and has not saved: opening another entry, reloading,
// reverting or archiving replaced it without a word.
let loaded = null; // what the editor's fields held right after the entry loaded

function fields() {
  return [$("e-desc").value, $("e-body").value, $("e-fields").value];
}

// Against the fields as loaded, not the entry: a textarea turns \r into \n, and every click
// then asked "Discard?" with nothing typed.
function unsaved() {
  if (!current || !loaded || $("entry").hidden || current.archived) return false;
  return fields().some((value, i) => value !== loaded[i]);
}

function mayDiscard() {
  return !unsaved() || confirm(t("discard_edits"));
}

/** The person opens an entry: asked first if what they typed in the open one would be lost. */
async function openEntry(kind, name, archived) {
  if (!mayDiscard()) return;
  await loadEntry(kind, name, archived);
}

async function loadEntry(kind, name, archived) {
  // Cleared before the entry loads, not after: what the user types meanwhile is kept.
  say($("notice"), "");
  $("purge-confirm").value = "";
  $("purge-history").checked = false; // never carried over to the next entry
  $("purge-logs").checked = false;
  say($("e-status"), "");
  $("e-history").hidden = true;
  const query = archived ? "?archived=true" : "";
  let data;
  try {
    ({ data } = await api("GET", `/v1/memories/${kind}/${encodeURIComponent(name)}${query}`));
  } catch (error) {
    // Gone or broken by hand since the list was read: say so, and show no other entry as if
    // it were this one.
    current = null;
    $("entry").hidden = true;
    document.querySelectorAll("#list li").forEach((li) => li.classList.remove("on"));
    say($("notice"), error.message, true);
    paintBroken();
    return;
  }
  current = data;
  document.querySelectorAll("#list li").forEach((li) => li.classList.toggle("on", li.dataset.name === name));
  $("entry").hidden = false;
  $("conflict").hidden = true;
  $("e-title").textContent = `${kindName(data.kind)} / ${data.name}`;
  $("e-path").textContent = `${data.path} · score ${data.score}`;
  $("e-desc").value = data.description;
  $("e-body").value = data.body;
  $("e-fields").value = JSON.stringify(editable(data.meta), null, 2);
  loaded = fields();
  $("archive").hidden = data.archived || data.kind === "profile";
  $("save").hidden = data.archived; // restore it first: a save went to the live namesake
  $("restore").hidden = !data.archived;
}

function editable(meta) {
  return Object.fromEntries(Object.entries(meta).filter(([key]) => !CORE.includes(key)));
}

async function save() {
  let fields;
  try {
    fields = JSON.parse($("e-fields").value || "{}");
    if (typeof fields !== "object" || Array.isArray(fields) || fields === null) throw new Error();
  } catch {
    say($("e-status"), t("bad_json"), true);
    return;
  }
  const before = editable(current.meta);
  const changed = {};
  for (const [key, value] of Object.entries(fields)) {
    if (JSON.stringify(before[key]) !== JSON.stringify(value)) changed[key] = value;
  }
  for (const key of Object.keys(before)) if (!(key in fields)) changed[key] = null;
  const path = `/v1/memories/${current.kind}/${encodeURIComponent(current.name)}`;
  say($("e-status"), ""); // an earlier "Saved." must not stand under a refusal
  try {
    // Only what the person changed: a textarea turns a stored \r\n into \n, and a Save that
    // sent every field back rewrote what nobody edited (a probe: a description's line break
    // dropped by the input it was shown in, a body's CRLF made LF).
    const description = $("e-desc").value;
    const body = $("e-body").value;
    const edit = { fields: changed };
    if (description !== loaded[0]) edit.description = description;
    if (body !== loaded[1]) edit.body = body;
    await api("PATCH", path, edit, { "If-Match": `"${current.etag}"` });
    await loadEntry(current.kind, current.name, false);
    say($("e-status"), t("saved"));
  } catch (error) {
    if (error.status === 412) $("conflict").hidden = false;
    else say($("e-status"), error.message, true);
  }
}

async function act(what) {
  if (!mayDiscard()) return;
  const base = `/v1/memories/${current.kind}/${encodeURIComponent(current.name)}`;
  try {
    if (what === "archive") {
      await api("POST", `${base}/archive`, {}, { "If-Match": `"${current.etag}"` });
    } else if (what === "restore") {
      await api("POST", `${base}/restore`, {});
    } else {
      // A purge takes the name everywhere, live and archived: from the archived view it
      // would delete a live namesake unseen, and from the live view only the version shown.
      if (current.archived && await liveNamesake(current)) {
        say($("e-status"), t("purge_live_too"), true);
        return;
      }
      const params = new URLSearchParams({ confirm: $("purge-confirm").value, history: String($("purge-history").checked) });
      const watching = $("purge-history").checked ? watchPurge() : null;
      // And the daemon checks it again as it deletes: a namesake made meanwhile stops it.
      const exact = current.archived ? { "If-None-Match": "*" } : { "If-Match": `"${current.etag}"` };
      try {
        await api("POST", `${base}/purge?${params}`, { scrubLogs: $("purge-logs").checked }, exact);
      } finally {
        if (watching) watching.stop();
      }
    }
    $("entry").hidden = true;
    say($("notice"), t({ archive: "archived_done", restore: "restored", purge: "purged" }[what]));
    await loadList();
  } catch (error) {
    if (error.status === 412) $("conflict").hidden = false; // changed since the page read it
    else say($("e-status"), error.message, true);
  }
}

async function liveNamesake(entry) {
  try {
    await api("GET", `/v1/memories/${entry.kind}/${encodeURIComponent(entry.name)}`);
    return true;
  } catch (error) {
    if (error.status === 404) return false;
    throw error;
  }
}

// A purge from history may take minutes on a long one: say how long, as the daemon knows.
function watchPurge() {
  let stopped = false;
  let timer = null;
  const tick = async () => {
    try {
      const { data } = await api("GET", "/v1/history/purge");
      if (!stopped && data.running && data.phase === "rewriting") {
        say($("e-status"), t("purging").replace("{n}", data.commits)
          .replace("{s}", Math.ceil(data.remainingSeconds ?? data.estimatedSeconds ?? 0)).replace("{done}", data.done));
      }
    } catch { /* the purge's own answer says what went wrong */ }
    if (!stopped) timer = setTimeout(tick, 1000);
  };
  timer = setTimeout(tick, 200);
  return { stop: () => { stopped = true; clearTimeout(timer); } };
}

// --- one entry's history -------------------------------------------------------------------

async function loadEntryHistory(limit = 50) {
  const base = `/v1/history/entries/${current.kind}/${encodeURIComponent(current.name)}`;
  try {
    const { data } = await api("GET", `${base}?limit=${limit}`);
    const older = data.total > data.items.length
      ? [el("button", { class: "older", onclick: () => loadEntryHistory(limit + 50) }, t("older").replace("{n}", data.items.length).replace("{total}", data.total))] : [];
    $("changes").replaceChildren(...(data.items.length ? data.items.map(({ commit, entries }) => el("div", {
      class: "change", "data-commit": commit.id, "data-source": commit.source,
    }, el("h4", {}, `${commit.date.slice(0, 19).replace("T", " ")} · ${commit.author} · ${commit.subject}`),
    ...entries.map((entry) => diffBlock(entry.diff)),
    el("button", { class: "revert-change", onclick: () => revertChange(base, commit.id) }, t("revert_change")),
    )) : [el("p", { class: "muted" }, t("no_history"))]), ...older);
    $("e-history").hidden = false;
  } catch (error) {
    $("e-history").hidden = false;
    say($("h-status"), error.message, true);
  }
}

async function revertChange(base, commit) {
  if (!mayDiscard()) return;
  try {
    await api("POST", `${base}/${commit}/revert`);
  } catch (error) {
    const which = (error.body.entries || []).map((e) => `${e.label} (${e.commits.join(", ")})`).join("; ");
    say($("h-status"), error.body.code === "revert_conflict" ? `${t("revert_refused")}: ${which}` : error.message, true);
    return;
  }
  try {
    await loadEntry(current.kind, current.name, current.archived);
  } catch (error) {
    if (error.status !== 404) throw error;
    $("entry").hidden = true;
    say($("notice"), t("entry_gone"));
    await loadList();
    return;
  }
  await loadEntryHistory();
  say($("h-status"), t("change_reverted"));
}

// --- search -----------------------------------------------------------------------------

async function search(event) {
  event.preventDefault();
  const body = { query: $("q").value, explain: true, limit: 10 };
  if ($("project").value) body.project = $("project").value;
  let data;
  try {
    ({ data } = await api("POST", "/v1/recall", body));
  } catch (error) {
    $("results").replaceChildren(el("li", { class: "error" }, error.message));
    return;
  }
  const lines = (data.lines || []).map((line) => el("li", { class: "line" },
    el("strong", {}, `${line.speaker || line.role}`), ` · ${t("conversation")} ${line.log}${line.time ? ` · ${line.time}` : ""} · ${line.score.toFixed(3)}`,
    el("div", { class: "muted" }, line.text)));
  $("results").replaceChildren(...(data.items.length || lines.length ? [...data.items.map((item) => el("li", {
    onclick: () => { $("kind").value = item.kind; $("scope").value = "live"; show("memories"); openEntry(item.kind, item.name, false); },
  }, el("strong", {}, `${item.name}`), ` · ${kindName(item.kind)} · ${item.score.toFixed(3)}`,
  el("div", { class: "muted" }, item.description || item.content.slice(0, 160)),
  el("div", { class: "parts" }, ...Object.entries(item.components || {}).map(([part, value]) => el("span", { class: "part" }, `${part} ${Number(value).toFixed(3)}`))),
  )), ...lines] : [el("li", { class: "muted" }, t("no_results"))]));
}

// --- intentions ---------------------------------------------------------------------------

async function loadAgenda() {
  let data;
  try {
    ({ data } = await api("GET", "/v1/intentions"));
  } catch (error) {
    $("agenda").replaceChildren(el("li", { class: "error" }, error.message));
    return;
  }
  $("agenda").replaceChildren(...(data.items.length ? data.items.map((item) => el("li", {},
    el("strong", {}, item.what), el("div", { class: "muted" },
      `${item.priority} · ${item.status}${item.due ? ` · ${t("due")} ${item.due}` : ""}${item.cue.length ? ` · ${item.cue.join(", ")}` : ""}`)))
    : [el("li", { class: "muted" }, t("empty"))]));
}

// --- dreams ------------------------------------------------------------------------------

async function loadDreams(limit = 50) {
  let data;
  try {
    ({ data } = await api("GET", `/v1/history?dreams=true&limit=${limit}`));
  } catch (error) {
    $("dreams").replaceChildren(el("li", { class: "error" }, error.message));
    return;
  }
  const older = data.total > data.items.length
    ? [el("li", { class: "muted more", onclick: () => loadDreams(limit + 50) }, t("older").replace("{n}", data.items.length).replace("{total}", data.total))] : [];
  $("dreams").replaceChildren(...(data.items.length ? data.items.map((commit) => el("li", {
    "data-dream": commit.dreamId, onclick: () => openDream(commit), class: commit.revertedBy ? "reverted" : "",
  }, el("strong", {}, commit.dreamId), el("div", { class: "muted" }, commit.subject),
  ...(commit.revertedBy ? [el("div", { class: "muted reverted-by" }, `${t("reverted_by")} ${commit.revertedBy.slice(0, 12)}`)] : [])))
    : [el("li", { class: "muted" }, t("empty"))]), ...older);
}

async function openDream(commit) {
  document.querySelectorAll("#dreams li").forEach((li) => li.classList.toggle("on", li.dataset.dream === commit.dreamId));
  let data;
  try {
    ({ data } = await api("GET", `/v1/history/${commit.id}`));
  } catch (error) {
    $("dream-detail").hidden = true;
    say($("dreams-status"), error.message, true);
    return;
  }
  $("dream-detail").hidden = false;
  $("dream-detail").dataset.dream = commit.dreamId;
  $("d-title").textContent = `${commit.dreamId} · ${commit.subject}`;
  // Undone already: said, and no button to undo it again (a second revert was refused).
  const reverted = data.commit.revertedBy;
  $("revert").hidden = Boolean(reverted);
  say($("d-status"), reverted ? `${t("reverted_by")} ${reverted.slice(0, 12)}` : "");
  const entries = [...data.entries].sort((a, b) => Number(!a.change.kind) - Number(!b.change.kind));
  $("diffs").replaceChildren(...entries.map((entry) => el("div", {},
    el("h3", {}, entry.change.kind ? `${kindName(entry.change.kind)} / ${entry.change.name} (${entry.change.status})` : entry.change.path),
    diffBlock(entry.diff))));
}

function diffBlock(text) {
  const pre = el("pre", { class: "diff" });
  const lines = text.split("\n");
  for (const line of lines.slice(Math.max(0, lines.findIndex((l) => l.startsWith("@@"))))) {
    const cls = line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : "";
    pre.append(el("span", cls ? { class: cls } : {}, `${line}\n`));
  }
  return pre;
}

async function revertDream() {
  const id = $("dream-detail").dataset.dream;
  try {
    await api("POST", `/v1/dreams/${encodeURIComponent(id)}/revert`);
    say($("d-status"), t("reverted"));
    $("revert").hidden = true;
    await loadDreams();
  } catch (error) {
    const which = (error.body.entries || []).map((e) => e.label).join(", ");
    say($("d-status"), error.body.code === "revert_conflict" ? `${t("revert_refused")}: ${which}` : error.message, true);
  }
}

// --- identity: every profile change, for review -------------------------------------------

async function loadIdentity() {
  const params = new URLSearchParams({ limit: "100", dreams: String($("identity-dreams").checked) });
  try {
    const { data } = await api("GET", `/v1/history/identity?${params}`);
    $("identity-changes").replaceChildren(...(data.items.length ? data.items.map(identityChange) : [el("p", { class: "muted" }, t("empty"))]));
  } catch (error) {
    say($("i-status"), error.message, true);
  }
}

function identityChange({ commit, entries }) {
  const who = commit.dreamId ? `${commit.author} ${commit.dreamId}` : commit.author;
  return el("div", { class: "change identity-change", "data-commit": commit.id, "data-source": commit.source },
    el("h4", {}, `${commit.date.slice(0, 19).replace("T", " ")} · ${who} · ${commit.subject}`),
    ...entries.map((entry) => el("div", { class: "identity-entry", "data-name": entry.change.name || "" },
      el("h5", {}, `${kindName("profile")} / ${entry.change.name} (${entry.change.status})`),
      diffBlock(entry.diff),
      entry.revertedBy
        ? el("p", { class: "muted reverted" }, `${t("reverted_by")} ${entry.revertedBy.slice(0, 12)}`)
        : el("button", { class: "revert-identity", onclick: () => revertIdentity(entry.change.name, commit.id) }, t("revert_change")))));
}

async function revertIdentity(name, commit) {
  say($("i-status"), "");
  try {
    await api("POST", `/v1/history/entries/profile/${encodeURIComponent(name)}/${commit}/revert`);
  } catch (error) {
    const which = (error.body.entries || []).map((e) => `${e.label} (${e.commits.join(", ")})`).join("; ");
    say($("i-status"), error.body.code === "revert_conflict" ? `${t("revert_refused")}: ${which}` : error.message, true);
    return;
  }
  await loadIdentity();
  say($("i-status"), t("identity_reverted"));
}

// --- sync with the other machines, and its conflicts ------------------------------------------

const when = (iso) => (iso ? iso.slice(0, 19).replace("T", " ") : t("never"));

async function loadSync() {
  try {
    paintSync((await api("GET", "/v1/sync/status")).data);
  } catch (error) {
    say($("s-status"), error.message, true);
  }
}

function paintSync(status) {
  syncStatus = status;
  $("sync-off").hidden = status.enabled;
  $("sync-off").textContent = `${t("sync_off")}: ${status.detail || ""}`;
  $("sync-now").disabled = !status.enabled;
  $("sync-state").dataset.state = status.state;
  const facts = status.enabled ? [
    ["sync_state", t(`state_${status.state}`)], ["sync_remote", status.remote], ["sync_machine", status.machine],
    ["sync_last_pull", when(status.lastPull)], ["sync_last_push", when(status.lastPush)],
    ["sync_ahead_behind", t("ahead_behind").replace("{a}", status.ahead ?? "?").replace("{b}", status.behind ?? "?")],
  ] : [["sync_state", t("state_off")], ["sync_machine", status.machine || ""]];
  const rows = facts.map(([key, value]) => [el("dt", {}, t(key)), el("dd", { "data-fact": key }, value)]).flat();
  if (status.lastError) {
    rows.push(el("dt", { class: "error" }, t("sync_last_error")),
      el("dd", { class: "error", "data-fact": "sync_last_error" }, `${status.lastError} (${when(status.lastErrorAt)})`));
  }
  $("sync-state").replaceChildren(...rows);
  $("sync-conflicts").replaceChildren(...(status.conflicts.length ? status.conflicts.map(conflictBlock) : [el("p", { class: "muted" }, t("no_conflicts"))]));
}

// Merged here, the entry holds this machine's version; merged on another machine (mergedOn),
// that machine's, and the file set aside the remote's at that merge (often this machine's own).
function conflictBlock(conflict) {
  const title = conflict.kind ? `${kindName(conflict.kind)} / ${conflict.name}` : conflict.entry;
  const on = conflict.mergedOn;
  const label = (key) => t(key).replaceAll("{m}", on || "");
  return el("div", { class: "sync-conflict", "data-path": conflict.path, "data-entry": conflict.entry },
    el("h4", {}, title, el("span", { class: "muted" }, ` · ${conflict.entry}`)),
    ...(on ? [el("p", { class: "merged-on muted" }, label("merged_on_intro"))] : []),
    el("div", { class: "both" },
      el("div", {}, el("h5", {}, label(on ? "entry_version_of" : "this_version")), sideText("this-text", conflict.entryText ?? t("no_entry_file"), conflict.text)),
      el("div", {}, el("h5", {}, `${label(on ? "aside_version" : "other_version")} · ${conflict.path}`), sideText("other-text", conflict.text, conflict.entryText ?? ""))),
    el("div", { class: "bar" },
      el("button", { class: "keep-this", onclick: () => resolveConflict(conflict.path, "this") }, label(on ? "keep_entry" : "keep_this")),
      el("button", { class: "take-other", onclick: () => resolveConflict(conflict.path, "other", on) }, label(on ? "take_aside" : "take_other"))));
}

// One side of a conflict, its lines the other side lacks marked.
function sideText(cls, text, other) {
  const theirs = new Set(other.split("\n"));
  const pre = el("pre", { class: `diff ${cls}` });
  for (const line of text.split("\n")) pre.append(el("span", theirs.has(line) ? {} : { class: "differs" }, `${line}\n`));
  return pre;
}

async function syncNow() {
  $("sync-now").disabled = true;
  say($("s-status"), t("syncing"));
  try {
    paintSync((await api("POST", "/v1/sync")).data);
    say($("s-status"), t("synced"));
  } catch (error) {
    say($("s-status"), error.message, true);
    await loadSync(); // the status says why too, and when
  } finally {
    $("sync-now").disabled = !(syncStatus && syncStatus.enabled);
  }
}

async function resolveConflict(path, keep, mergedOn) {
  say($("s-status"), "");
  try {
    await api("DELETE", `/v1/sync/conflicts?${new URLSearchParams({ path, keep })}`);
  } catch (error) {
    say($("s-status"), error.message, true);
    return;
  }
  await loadSync();
  say($("s-status"), t(mergedOn ? (keep === "other" ? "took_aside" : "kept_entry") : (keep === "other" ? "took_other" : "kept_this")));
}

// --- sleep, live ---------------------------------------------------------------------------

let sleepState = { sleeping: false, extra: "" };

function paintSleep(sleeping = sleepState.sleeping, extra = sleepState.extra) {
  sleepState = { sleeping, extra };
  const badge = $("sleep");
  badge.textContent = `${sleeping ? t("sleeping") : t("awake")}${extra ? ` · ${extra}` : ""}`;
  badge.classList.toggle("sleeping", sleeping);
}

async function watchSleep() {
  const badge = $("sleep");
  const paint = paintSleep;
  try {
    const { data } = await api("GET", "/v1/sleep/status");
    paint(data.sleeping);
  } catch (error) {
    if (error.status === 401) return; // the session ended: the login shows
  }
  if (events) events.close();
  events = null;
  if (document.hidden) return; // opened again when the tab is shown
  events = new EventSource(`/v1/sleep/events?key=${encodeURIComponent(localStorage.getItem(KEY) || "")}`);
  events.addEventListener("started", () => paint(true));
  events.addEventListener("finished", (e) => { paint(false, JSON.parse(e.data).status); if (!$("view-dreams").hidden) loadDreams(); });
  events.onmessage = (e) => paint(badge.classList.contains("sleeping"), `${t("event")}: ${JSON.parse(e.data).type}`);
  // A browser retries a stream cut by the network, not one answered with an error: after a
  // restart (which ends the session: 401) the badge stood still until the next login. Ask
  // again shortly: the status says 401 (the login shows) or the stream opens anew.
  const stream = events;
  events.onerror = () => {
    if (stream.readyState !== EventSource.CLOSED || events !== stream) return;
    events = null;
    setTimeout(() => { if (!events && !$("tabs").hidden && !document.hidden) watchSleep(); }, 2000);
  };
}

// A hidden tab lets go of its stream: a browser keeps at most 6 connections to a host, and
// six open tabs each holding one left none for a page to load.
function followVisibility() {
  if (document.hidden) {
    if (events) { events.close(); events = null; }
  } else if (!$("tabs").hidden && !events) {
    watchSleep();
  }
}

// --- wiring --------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  translate();
  $("lang").addEventListener("change", () => { lang = $("lang").value; localStorage.setItem("somnid-lang", lang); translate(); });
  $("login-form").addEventListener("submit", login);
  $("logout").addEventListener("click", async () => { try { await api("POST", "/ui/logout"); } finally { showLogin(); } });
  document.addEventListener("visibilitychange", followVisibility);
  document.querySelectorAll("#tabs button").forEach((b) => b.addEventListener("click", () => show(b.dataset.tab)));
  for (const id of ["kind", "scope"]) $(id).addEventListener("change", loadList);
  $("filter").addEventListener("input", () => { filtering = true; loadList().finally(() => { filtering = false; }); });
  $("save").addEventListener("click", save);
  $("reload").addEventListener("click", () => openEntry(current.kind, current.name, current.archived));
  // Leaving the page with text typed and not saved: the browser asks.
  window.addEventListener("beforeunload", (event) => { if (unsaved()) event.preventDefault(); });
  $("archive").addEventListener("click", () => act("archive"));
  $("restore").addEventListener("click", () => act("restore"));
  $("purge").addEventListener("click", () => act("purge"));
  $("show-history").addEventListener("click", () => { say($("h-status"), ""); loadEntryHistory(); });
  $("search-form").addEventListener("submit", search);
  $("revert").addEventListener("click", revertDream);
  $("identity-dreams").addEventListener("change", () => { say($("i-status"), ""); loadIdentity(); });
  $("sync-now").addEventListener("click", syncNow);
  start();
});
