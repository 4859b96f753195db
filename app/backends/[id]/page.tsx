import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { BackendView } from "@/components/BackendView";
import { currentOperatorName } from "@/lib/auth/server";
import { getRuntime } from "@/lib/runtime";
import { parseRange } from "@/lib/ui/chart";

export const dynamic = "force-dynamic";

type Props = { params: Promise<{ id: string }>; searchParams: Promise<Record<string, string | string[] | undefined>> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  return { title: decodeURIComponent((await params).id) };
}

export default async function BackendPage({ params, searchParams }: Props) {
  const id = decodeURIComponent((await params).id);
  const rt = await getRuntime();
  if (!rt.config.backends.some((b) => b.id === id)) notFound();
  const r = (await searchParams).range;
  return <BackendView id={id} initialRange={parseRange(typeof r === "string" ? r : null)} operator={await currentOperatorName()} />;
}
