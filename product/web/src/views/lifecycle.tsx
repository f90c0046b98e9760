import { useEffect, useState } from "react";
import { LifecycleDetail, LifecycleEvent, api } from "../api";
import { fmtInt, fmtTime, shortId } from "../format";
import { ApprovePanel, CancelPanel, RejectPanel } from "./approval";
import { ErrorNote, WorkerWords } from "./common";
import { StatusBadge } from "./lifecycles";
import { AcceptanceList, DiffView, ReviewFindings, TestList } from "./review";

export function LifecycleView({ id, version }: { id: string; version: number }) {
  const [d, setD] = useState<LifecycleDetail>();
  const [events, setEvents] = useState<LifecycleEvent[]>([]);
  const [err, setErr] = useState<unknown>();
  const [reload, setReload] = useState(0);
  useEffect(() => {
    let live = true;
    Promise.all([api.lifecycle(id), api.lifecycleEvents(id)]).then(
      ([d, e]) => {
        if (live) {
          setD(d);
          setEvents(e.items);
          setErr(undefined);
        }
      },
      (e) => live && setErr(e),
    );
    return () => {
      live = false;
    };
  }, [id, version, reload]);
  if (err) return <ErrorNote error={err} />;
  if (!d) return <p>Loading…</p>;
  const s = d.summary;
  return (
    <section aria-labelledby="lcd-h">
      <h1 id="lcd-h">
        Lifecycle <code>{s.lifecycle_id}</code>
      </h1>
      <p>
        {s.task} <StatusBadge s={s} /> <span className="muted">change {s.change_id}, round {s.round}</span>
      </p>
      <ol className="phases" aria-label="Phases">
        {d.phases.map((p) => (
          <li key={p.phase} className={"phase phase-" + p.status} aria-current={p.status === "active" ? "step" : undefined}>
            <span className="phase-name">{p.phase}</span>
            <span className="phase-status">{p.status}</span>
          </li>
        ))}
      </ol>
      <section aria-labelledby="patch-h">
        <h2 id="patch-h">Patch</h2>
        {d.patch ? (
          <>
            <p>
              <span className="mono">{d.patch.patch_id}</span> (revision {d.patch.revision}):{" "}
              {d.patch.files.map((f) => `${f.path} ${f.op}, ${fmtInt(f.bytes)} bytes`).join("; ")}
            </p>
            <DiffView patch={d.patch} diff={d.diff} />
          </>
        ) : (
          <p className="muted">No patch yet.</p>
        )}
      </section>
      <div className="columns">
        <div>
          <h2>Acceptance criteria</h2>
          <AcceptanceList items={d.acceptance} />
          <h2>Tests</h2>
          <TestList tests={d.tests} />
          <h2>Verification</h2>
          {d.verification ? (
            <p>
              <span className={"badge " + (d.verification.verdict === "verified" ? "hit" : "miss")}>{d.verification.verdict}</span>{" "}
              <span className="mono">{shortId(d.verification.verification_id)}</span>{" "}
              <span className="muted">by an independent verifier; its verdict on each criterion is above.</span>
            </p>
          ) : (
            <p className="muted">Not verified yet.</p>
          )}
          <h2>Review</h2>
          <ReviewFindings review={d.review} />
          <ApprovePanel key={s.lifecycle_id} detail={d} onDone={() => setReload((n) => n + 1)} />
          <RejectPanel key={"reject-" + s.lifecycle_id} detail={d} onDone={() => setReload((n) => n + 1)} />
          <CancelPanel key={"cancel-" + s.lifecycle_id} detail={d} onDone={() => setReload((n) => n + 1)} />
        </div>
        <div>
          <h2>Events</h2>
          <ol className="timeline" aria-label="Lifecycle events in order">
            {events.map((e) => (
              <li key={e.seq} data-seq={e.seq} data-kind={e.kind}>
                <span className="seq">#{e.seq}</span> <time dateTime={e.at}>{fmtTime(e.at)}</time> <strong>{e.kind}</strong>{" "}
                <span className="muted">
                  → {e.phase}/{e.status.replace(/_/g, " ")}
                </span>
                <div>{e.summary}</div>
                {e.detail && (
                  <div>
                    <WorkerWords w={e.detail} what="worker's report" />
                  </div>
                )}
                <div className="muted mono">payload {shortId(e.payload_digest)}</div>
              </li>
            ))}
          </ol>
        </div>
      </div>
    </section>
  );
}

