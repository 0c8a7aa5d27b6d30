/// <reference types="vite/client" />
import readme from "../../README.md?raw";

/** README.md and every page under docs/, by path from the repository root. */
export const pages: Record<string, string> = {
  "README.md": readme,
  ...Object.fromEntries(
    Object.entries(import.meta.glob<string>("../../docs/**/*.md", { query: "?raw", import: "default", eager: true })).map(([p, text]) => [
      p.slice("../../".length),
      text,
    ]),
  ),
};
