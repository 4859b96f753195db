/**
 * vitest globalSetup of the "storage-pg" project (vitest.config.mts): one PostgreSQL 15 for the
 * whole run, with the migrated template tests/support/test-db.ts copies a fresh database from for
 * each test; stopped and removed when the run ends.
 */
import type { TestProject } from "vitest/node";
import { startTemplateServer } from "./pg-template";

export default async function setup(project: TestProject): Promise<() => void> {
  const server = await startTemplateServer();
  project.provide("stepwatchPgUrl", server.url);
  return () => server.destroy();
}
