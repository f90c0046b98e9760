import { ApiError, WorkerText } from "../api";

export function ErrorNote({ error }: { error: unknown }) {
  const msg = error instanceof ApiError ? `${error.detail.kind}: ${error.detail.message}` : String(error);
  return (
    <p className="error" role="alert">
      {msg}
    </p>
  );
}

// WorkerWords shows free text a worker wrote as what it is: quoted, after
// a label saying whose words they are and that Needle never checked them
// (the CLI's and MCP's "worker's description (unverified)").
export function WorkerWords({ w, what }: { w: WorkerText; what: string }) {
  if (!w.text) return null;
  return (
    <span className="worker-text" data-unverified={String(w.unverified)} data-source={w.source}>
      <span className="badge unverified" title="Written by a worker; Needle did not verify it">
        {what} (unverified)
      </span>{" "}
      <q>{w.text}</q>
    </span>
  );
}
