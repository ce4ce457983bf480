/** Files imported `with { type: "file" }` resolve to their path (embedded in the compiled binary). */
declare module "*.zst" {
  const path: string;
  export default path;
}

declare module "*.tgz" {
  const path: string;
  export default path;
}
