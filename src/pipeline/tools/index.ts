export * from "./define";
export * from "./execute";
export * from "./loop";
export * from "./builtin";
