/** The inspector's stylesheet, served as /ui/inspector.css. */
export const INSPECTOR_CSS = `
:root { --fg: #1d2330; --muted: #6b7385; --line: #dde1e8; --bg: #f6f7f9; --card: #fff; --accent: #3559e0; --err: #b42318; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; align-items: center; gap: 1rem; justify-content: space-between; padding: .75rem 1.25rem; background: var(--card); border-bottom: 1px solid var(--line); }
h1 { font-size: 1.15rem; margin: 0; }
h2 { font-size: 1rem; margin: 0; }
h3 { font-size: .8rem; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); margin: 1.1rem 0 .4rem; }
form { display: flex; gap: .4rem; align-items: center; flex-wrap: wrap; }
input { font: inherit; padding: .3rem .5rem; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
#key { width: 18rem; }
#scopes { flex: 1; min-width: 12rem; }
#max-tokens { width: 6rem; }
button { font: inherit; padding: .3rem .7rem; border: 1px solid var(--line); border-radius: 6px; background: #fff; cursor: pointer; }
button:hover:not(:disabled) { border-color: var(--accent); color: var(--accent); }
button:disabled { opacity: .5; cursor: default; }
button[type=submit] { background: var(--accent); border-color: var(--accent); color: #fff; }
button[type=submit]:hover { color: #fff; filter: brightness(1.1); }
#status { margin: 0; padding: .4rem 1.25rem; color: var(--muted); min-height: 1.9rem; }
#status.error { color: var(--err); background: #fef3f2; }
main { display: grid; grid-template-columns: 16rem 1fr; gap: 1rem; padding: 0 1.25rem 1.5rem; align-items: start; }
nav, #thread { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: .8rem; }
.panel-head { display: flex; align-items: center; gap: .75rem; flex-wrap: wrap; }
.panel-head h2 { margin-right: auto; }
ul, ol { list-style: none; margin: 0; padding: 0; }
#threads { margin: .6rem 0; }
.thread-link { display: flex; flex-direction: column; align-items: flex-start; width: 100%; margin-bottom: .3rem; text-align: left; }
.thread-link.active { border-color: var(--accent); background: #eef2fd; }
.thread-id { font-weight: 600; word-break: break-all; }
.columns { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 1.25rem; }
.muted { color: var(--muted); }
.small { font-size: .8rem; }
code { font: .8rem ui-monospace, SFMono-Regular, Menlo, monospace; }
pre { font: .78rem/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: .5rem; overflow: auto; max-height: 18rem; white-space: pre-wrap; word-break: break-word; margin: .3rem 0; }
.msg { border: 1px solid var(--line); border-radius: 8px; padding: .5rem .7rem; margin-bottom: .5rem; background: #fff; }
.msg-head { display: flex; gap: .6rem; align-items: baseline; font-size: .8rem; }
.msg-head code { margin-left: auto; }
.msg-text { margin: .3rem 0 0; white-space: pre-wrap; word-break: break-word; }
.role { font-weight: 600; font-size: .75rem; padding: .05rem .45rem; border-radius: 99px; background: #eceff4; }
.role-user { background: #e6efff; color: #2443b5; }
.role-assistant { background: #e7f6ec; color: #1d6b3a; }
.role-system { background: #f4ecff; color: #6237b5; }
.role-tool { background: #fff3e0; color: #9a5b00; }
details { margin-top: .3rem; }
summary { cursor: pointer; color: var(--muted); font-size: .85rem; }
.cp { border-left: 4px solid var(--line); padding: .35rem .6rem; margin-bottom: .35rem; background: #fff; border-radius: 0 6px 6px 0; }
.cp.selected { background: #eef2fd; }
.cp-head { display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; }
.cp-actions { display: flex; gap: .4rem; margin-top: .25rem; }
.cp-actions button { padding: .1rem .5rem; font-size: .8rem; }
.badge, .lane { font-size: .7rem; font-weight: 600; padding: .05rem .4rem; border-radius: 4px; background: #eceff4; }
.badge.head { background: var(--accent); color: #fff; }
.lane-0 { background: #dbe4ff; } .lane-border-0 { border-left-color: #6f8cf0; }
.lane-1 { background: #ffe3d6; } .lane-border-1 { border-left-color: #f08a5d; }
.lane-2 { background: #d8f5e3; } .lane-border-2 { border-left-color: #3fb26f; }
.lane-3 { background: #f5dcf5; } .lane-border-3 { border-left-color: #c158c1; }
.lane-4 { background: #fff1c2; } .lane-border-4 { border-left-color: #d8a800; }
.lane-5 { background: #d9f2f7; } .lane-border-5 { border-left-color: #2aa3bd; }
.kv { display: grid; grid-template-columns: max-content 1fr; gap: .15rem .8rem; margin: 0; }
.kv dt { color: var(--muted); }
.kv dd { margin: 0; word-break: break-word; }
.facts li { padding: .25rem 0; border-bottom: 1px dashed var(--line); white-space: pre-wrap; word-break: break-word; }
@media (max-width: 900px) { main, .columns { grid-template-columns: 1fr; } }
`;
