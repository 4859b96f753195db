import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { BackendView } from "@/components/BackendView";
import { EvidencePanel } from "@/components/EvidencePanel";
import { backendEvidence } from "@/lib/api/evidence";
import { currentViewer } from "@/lib/api/operator";
import { getRuntime } from "@/lib/runtime";
import { parseRange, parseWindow } from "@/lib/ui/chart";

export const dynamic = "force-dynamic";

type Props = { params: Promise<{ id: string }>; searchParams: Promise<Record<string, string | string[] | undefined>> };

const one = (v: string | string[] | undefined): string | null => (typeof v === "string" ? v : null);

async function knownIds(): Promise<string[]> {
  return (await getRuntime()).config.backends.map((b) => b.id);
}

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  const id = decodeURIComponent((await params).id);
  return { title: (await knownIds()).includes(id) ? id : "Unknown backend" };
}

export default async function BackendPage({ params, searchParams }: Props) {
  const id = decodeURIComponent((await params).id);
  const known = await knownIds();
  // A mistyped or removed id: a 404 whose page says so and lists the known ones (not-found.tsx).
  if (!known.includes(id)) notFound();
  const sp = await searchParams;
  const evidence = await backendEvidence(id);
  return (
    <>
      <BackendView
        id={id}
        initialRange={parseRange(one(sp.range))}
        initialWindow={parseWindow(one(sp.from), one(sp.to))}
        viewer={await currentViewer()}
      />
      {/* Server-rendered on each request: a bundle changes only on an incident, never between polls. */}
      <EvidencePanel latest={evidence.latest} others={evidence.list} />
    </>
  );
}
