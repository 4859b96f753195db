import type { Metadata } from "next";
import { SessionsList } from "@/components/SessionsList";

export const metadata: Metadata = { title: "Your sessions" };
export const dynamic = "force-dynamic";

export default function AccountPage() {
  return <SessionsList />;
}
