"use client";
import Link from "next/link";
import useSWR from "swr";
import { getJson, sendJson } from "@/lib/ui/fetcher";
import { formatDateTime } from "@/lib/core/format";

interface SessionsAnswer {
  operator: string;
  sessions: Array<{ id: string; createdAt: number; expiresAt: number; lastSeenAt: number; address: string | null; userAgent: string | null; current: boolean }>;
}

/** The signed-in user's own sessions (where and when), each with an End button. */
export function SessionsList() {
  const { data, error, mutate } = useSWR<SessionsAnswer>("/api/sessions", getJson);
  async function end(id: string) {
    await sendJson(`/api/sessions/${id}`, "DELETE").catch(() => undefined);
    await mutate();
  }
  return (
    <>
      <div className="page-head">
        <h1>Your sessions</h1>
        <span className="meta">
          every browser signed in as you; <Link href="/audit">audit log</Link>
        </span>
      </div>
      {error ? (
        <div className="banner error" role="alert">
          {(error as Error).message}
        </div>
      ) : null}
      {data ? (
        <div className="table-wrap">
          <table data-testid="sessions-table">
            <thead>
              <tr>
                <th>Signed in</th>
                <th>Last seen</th>
                <th>Ends</th>
                <th>From</th>
                <th>Browser</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {data.sessions.map((s) => (
                <tr key={s.id} data-testid="session-row">
                  <td>{formatDateTime(s.createdAt)}</td>
                  <td>{formatDateTime(s.lastSeenAt)}</td>
                  <td>{formatDateTime(s.expiresAt)}</td>
                  <td>{s.address ?? ""}</td>
                  <td className="small">{s.userAgent ?? ""}</td>
                  <td>
                    {s.current ? (
                      <span className="muted small">this browser</span>
                    ) : (
                      <button type="button" onClick={() => end(s.id)} data-testid="end-session">
                        End
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}
