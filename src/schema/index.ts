/**
 * Structured output: provider contracts, the wire transform, and answer
 * mapping and validation. Import from here; the validator library loads only
 * when `validateAnswer` first runs.
 */
export { SCHEMA_TARGETS, type SchemaTarget, type SchemaViolation } from "./contract.ts";
export { checkSchema, toWireSchema, SchemaContractError, type SchemaCheck, type WireSchema, type WireSchemaOptions } from "./wire-schema.ts";
export { fromWireAnswer } from "./wire-answer.ts";
export { validateAnswer, type AnswerValidation } from "./validate-answer.ts";
export { resolveSchemaArg, parseSchemaText, outputSchemaName, schemaName, schemaSource, withSchemaSource, SCHEMA_NAME, type ResolveSchemaOptions } from "./resolve-schema-arg.ts";
