// Renders the API reference with Scalar's viewer (served from this origin as /docs/scalar.js).
// A separate file, not an inline script, so the page's CSP needs no 'unsafe-inline' for scripts.
// No default fonts (they come from fonts.scalar.com) and no request proxy (proxy.scalar.com).
Scalar.createApiReference("#app", { url: "/openapi.json", withDefaultFonts: false, proxyUrl: "", telemetry: false });
