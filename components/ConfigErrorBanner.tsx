"use client";
import type { ConfigErrorDTO } from "@/lib/api/types";
import { Time } from "./TimeZone";

/** A refused config reload: the older config keeps running until the file is fixed. */
export function ConfigErrorBanner({ error }: { error: ConfigErrorDTO | null | undefined }) {
  if (!error) return null;
  return (
    <div className="banner error" role="alert" data-testid="config-error">
      <strong>Config not reloaded</strong>
      A reload ({error.trigger}, <Time at={error.at} />) found problems in the file, so the previous config keeps running:
      <ul className="reasons">
        {error.problems.map((p) => (
          <li key={p}>{p}</li>
        ))}
      </ul>
    </div>
  );
}
