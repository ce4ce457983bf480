/** Files imported `with { type: "file" }` resolve to their path (embedded in the compiled binary). */
declare module "*.txt" {
  const path: string;
  export default path;
}
