/**
 * valibot schemas built on their first use. Building a module's schemas when
 * it is imported cost every run's start milliseconds before its request (the
 * config's and the plugin host's, measured on the 2-core bench machine),
 * while a run without a config file whose plugins behave parses few of them
 * before its request, or none.
 */
import * as v from "valibot";

/** A function returning `make()`, which it calls once, on its first call. */
export function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}

/**
 * A schema standing for `make()`, which is built on the first parse
 * (valibot's lazy schema): the issues and the output are the built schema's.
 * Not for an entry of an object schema whose key may be missing: the object
 * would not see that the entry is optional.
 */
export function deferred<T extends v.GenericSchema>(make: () => T): v.LazySchema<T> {
  return v.lazy(once(make));
}
