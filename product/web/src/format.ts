// Small formatting helpers shared by the views.

export const fmtInt = (n: number) => n.toLocaleString("en-US");

export const fmtPct = (x: number) => (x * 100).toFixed(1) + "%";

export const fmtMs = (ms: number) => (ms < 1000 ? ms.toFixed(ms < 10 ? 1 : 0) + " ms" : (ms / 1000).toFixed(2) + " s");

export function fmtTime(iso: string): string {
  const d = new Date(iso);
  if (isNaN(d.getTime())) return iso;
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

// shortId keeps a content address recognisable: "b3:1a2b3c4d…".
export const shortId = (id: string) => (id.length > 16 ? id.slice(0, 11) + "…" : id);

export const HIT_KINDS = new Set(["exact_hit", "coverage_hit", "composite_hit", "claim_hit"]);
