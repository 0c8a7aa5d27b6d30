// Vite's import.meta.glob (used by the route-coverage test), typed for tsc.
interface ImportMeta {
  glob<T = Record<string, unknown>>(pattern: string, options: { eager: true }): Record<string, T>;
}
