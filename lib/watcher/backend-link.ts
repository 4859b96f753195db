/**
 * What a backend's reads keep from one poll to the next, for the URL they were made to: its
 * /metrics lines of last time (the next read parses only what changed, lib/metrics/prometheus.ts),
 * whether its filtered exposition works, and its own connection (lib/net/http.ts backendClient, opened on first use). Kept by the
 * watcher's monitor when it reads in its own thread, and by the read thread that reads the backend
 * otherwise (lib/watcher/read-worker.ts). A new URL starts both afresh: lines and connections of
 * another server are never reused.
 */
import type { Client } from "undici";
import { LineCache } from "../metrics/prometheus";
import { backendClient } from "../net/http";
import { FilterMemory } from "../check/read";

export class BackendLink {
  readonly cache = new LineCache();
  /** Whether this server answers the filtered exposition (lib/check/read.ts), learned by its reads. */
  readonly filter = new FilterMemory();
  /** undefined: not opened yet; null: `url` is no URL (the read reports that through the default dispatcher). */
  private opened: Client | null | undefined = undefined;

  constructor(readonly url: string) {}

  client(): Client | null {
    if (this.opened === undefined) this.opened = backendClient(this.url);
    return this.opened;
  }

  close(): void {
    void this.opened?.destroy();
    this.opened = null;
  }
}

/** `link` while it is for `url`; else a new link, the old one closed. */
export function linkFor(link: BackendLink | null | undefined, url: string): BackendLink {
  if (link?.url === url) return link;
  link?.close();
  return new BackendLink(url);
}
