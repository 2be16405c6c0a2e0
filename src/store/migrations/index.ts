import { SCHEMA_1_TO_5 } from "./v01-v05.js";
import { SCHEMA_6_ON } from "./v06-on.js";

/**
 * The store's schema, as numbered migrations. A migration is never edited once shipped: change the
 * schema by appending the next number. Times are milliseconds since the epoch (UTC).
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * The migration rebuilds a table that others reference (SQLite cannot change a CHECK in place):
   * it runs with foreign keys off, as SQLite's documented procedure asks, and must leave no
   * dangling reference (`PRAGMA foreign_key_check` is run before it commits).
   */
  rebuildsTables?: boolean;
}


/** Every migration, in order; db.ts applies those a store has not seen. */
export const MIGRATIONS: ReadonlyArray<Migration> = [...SCHEMA_1_TO_5, ...SCHEMA_6_ON];
