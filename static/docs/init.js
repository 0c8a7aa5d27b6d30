// Renders the API reference with Scalar's viewer (served from this origin as /docs/scalar.js).
// A separate file, not an inline script, so the page's CSP needs no 'unsafe-inline' for scripts.
// No default fonts (they come from fonts.scalar.com) and no request proxy (proxy.scalar.com).
// Scalar's hosted features are off: on a loopback origin it shows "Ask AI" (which sends the
// document to Scalar's servers), a "Generate SDKs & MCP" button and its developer toolbar —
// none of them work here, and their requests to other origins break the CSP.
Scalar.createApiReference("#app", {
  url: "/openapi.json",
  withDefaultFonts: false,
  proxyUrl: "",
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: "never",
});
