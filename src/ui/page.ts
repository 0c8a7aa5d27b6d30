/** The inspector's HTML shell, served as /ui. Script and styles are separate files so the CSP needs no inline allowance. */
export const INSPECTOR_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>edgeweave · thread inspector</title>
  <link rel="icon" href="/ui/favicon.svg" type="image/svg+xml">
  <link rel="stylesheet" href="/ui/inspector.css">
  <script src="/ui/inspector.js" defer></script>
</head>
<body>
  <header>
    <h1>edgeweave <span class="muted">thread inspector</span></h1>
    <form id="key-form" autocomplete="off">
      <label for="key">API key</label>
      <input id="key" name="key" type="password" placeholder="tenant admin key" autocomplete="off" spellcheck="false">
      <button type="submit">Use key</button>
      <button type="button" id="forget" hidden>Forget key</button>
      <span id="key-state" class="muted"></span>
    </form>
  </header>
  <p id="status" role="status" aria-live="polite">Enter a key; it is kept in this tab's session storage only.</p>
  <main>
    <nav id="threads-panel" aria-label="Threads">
      <div class="panel-head"><h2>Threads</h2><button type="button" id="refresh" disabled>Refresh</button></div>
      <ul id="threads"></ul>
      <button type="button" id="more-threads" hidden>More threads</button>
    </nav>
    <section id="thread" hidden>
      <div class="panel-head">
        <h2 id="thread-title"></h2>
        <span id="viewing" class="muted"></span>
        <button type="button" id="to-head" hidden>Back to head</button>
      </div>
      <div class="columns">
        <section aria-labelledby="h-messages">
          <h3 id="h-messages">Messages</h3>
          <ol id="messages"></ol>
        </section>
        <section>
          <h3>History</h3>
          <ol id="history"></ol>
          <button type="button" id="more-history" hidden>Older checkpoints</button>
          <h3>Routing of the last turn</h3>
          <div id="routing"></div>
          <h3>Channels</h3>
          <div id="channels"></div>
          <h3>Memory loaded for scopes</h3>
          <form id="memory-form">
            <input id="scopes" aria-label="Scopes, comma separated" spellcheck="false">
            <input id="max-tokens" type="number" min="1" value="4096" aria-label="Token budget">
            <button type="submit">Load</button>
          </form>
          <div id="memory"></div>
        </section>
      </div>
    </section>
  </main>
</body>
</html>
`;

/** A small mark for the tab, so the browser does not ask for /favicon.ico. */
export const INSPECTOR_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#3559e0"/><path d="M3 5h10M3 8h7M3 11h10" stroke="#fff" stroke-width="1.6"/></svg>`;
