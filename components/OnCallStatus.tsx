"use client";
/** The on-call lines of a backend (a crash loop, maintenance, acknowledgement, a coming unattended restart) and the failing-channel banner. */
import type { ChannelStatusDTO, FleetBackend } from "@/lib/api/types";
import { acknowledgedLine, crashLoopLine, failingChannelLine, maintenanceLine, unattendedLine } from "@/lib/ui/oncall";
import { useTimeZone } from "./TimeZone";

export function OnCallStatus({ b }: { b: FleetBackend }) {
  const { timeZone } = useTimeZone();
  if (!b.maintenance && !b.acknowledged && b.unattendedRestartAt === null && !b.crashLoop) return null;
  return (
    <ul className="oncall">
      {b.crashLoop ? (
        <li className="crash-loop" data-testid={`crash-loop-${b.id}`}>
          {crashLoopLine(b.crashLoop, timeZone)}
        </li>
      ) : null}
      {b.maintenance ? (
        <li className="maintenance" data-testid={`maintenance-${b.id}`}>
          {maintenanceLine(b.maintenance, timeZone)}
        </li>
      ) : null}
      {b.acknowledged ? (
        <li className="acknowledged" data-testid={`ack-${b.id}`}>
          {acknowledgedLine(b.acknowledged, timeZone)}
        </li>
      ) : null}
      {b.unattendedRestartAt !== null ? (
        <li className="unattended" data-testid={`unattended-${b.id}`}>
          {unattendedLine(b.id, b.unattendedRestartAt, timeZone)}
        </li>
      ) : null}
    </ul>
  );
}

export function FailingChannels({ channels }: { channels: ChannelStatusDTO[] | undefined }) {
  const failing = (channels ?? []).filter((c) => c.failing);
  if (failing.length === 0) return null;
  return (
    <>
      {failing.map((c) => (
        <div className="banner error" role="alert" key={c.id} data-testid={`channel-failing-${c.id}`}>
          <strong>Notifications failing</strong>
          {failingChannelLine(c)}
        </div>
      ))}
    </>
  );
}
