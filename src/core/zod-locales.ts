// Stands in for zod's list of locales in the worker bundle (wrangler.toml [alias]): zod speaks English
// unless configured otherwise, and the other 60-odd locales were ~60 KiB gzip of it that no code reads.
export { default as en } from "zod/v4/locales/en.js";
