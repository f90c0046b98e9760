import { useEffect, useState } from "react";
import { ApiError, ApplyResult, Approval, Conflict, LifecycleDetail, LifecycleEvent, api } from "../api";
import { fmtInt, fmtMs, fmtTime, shortId } from "../format";
import { ErrorNote, WorkerWords } from "./common";
import { StatusBadge } from "./lifecycles";

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
      <div className="columns">
        <div>
          <h2>Patch</h2>
          {d.patch ? (
            <>
              <p className="mono">
                {d.patch.patch_id} (revision {d.patch.revision})
              </p>
              <ul>
                {d.patch.files.map((f) => (
                  <li key={f.path}>
                    <code>{f.path}</code> {f.op}, {fmtInt(f.bytes)} bytes
                  </li>
                ))}
              </ul>
            </>
          ) : (
            <p className="muted">No patch yet.</p>
          )}
          <h2>Tests</h2>
          <ul>
            {d.tests.map((t) => (
              <li key={t.test} data-test={t.test}>
                <code>{t.test}</code> <span className={"badge " + (t.outcome === "passed" ? "hit" : "miss")}>{t.outcome || "not run"}</span>
                {t.outcome && <span className="muted"> {fmtMs(t.duration_ms)}</span>}
              </li>
            ))}
          </ul>
          <h2>Verification</h2>
          {d.verification ? (
            <>
              <p>
                <span className={"badge " + (d.verification.verdict === "verified" ? "hit" : "miss")}>{d.verification.verdict}</span>{" "}
                <span className="mono">{shortId(d.verification.verification_id)}</span>
              </p>
              <ol aria-label="Acceptance criteria">
                {d.verification.criteria.map((c) => (
                  <li key={c.digest}>
                    {c.status.replace(/_/g, " ")} <span className="mono">{shortId(c.digest)}</span>
                  </li>
                ))}
              </ol>
            </>
          ) : (
            <p className="muted">Not verified yet.</p>
          )}
          <ApprovePanel key={s.lifecycle_id} detail={d} onDone={() => setReload((n) => n + 1)} />
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

function Digests({ title, d }: { title: string; d: { patch: string; verification: string; lifecycle: string } }) {
  return (
    <dl className="digests" aria-label={title}>
      <dt>Patch</dt>
      <dd className="mono" data-digest="patch">
        {d.patch}
      </dd>
      <dt>Verification</dt>
      <dd className="mono" data-digest="verification">
        {d.verification}
      </dd>
      <dt>Lifecycle</dt>
      <dd className="mono" data-digest="lifecycle">
        {d.lifecycle}
      </dd>
    </dl>
  );
}

function ConflictNote({ c, message }: { c?: Conflict; message: string }) {
  return (
    <div className="conflict" role="alert" id="conflict">
      <h3>Refused: conflict (409)</h3>
      <p>{message}</p>
      {c && (
        <>
          <p>
            Reason: <strong data-conflict-reason={c.reason}>{c.reason.replace(/_/g, " ")}</strong>
          </p>
          {c.paths.length > 0 && (
            <>
              <p>These paths changed in the work tree since the patch was made:</p>
              <ul>
                {c.paths.map((p) => (
                  <li key={p}>
                    <code>{p}</code>
                  </li>
                ))}
              </ul>
            </>
          )}
          {c.reason === "digest_mismatch" && (
            <>
              <h4>Approved digests</h4>
              <Digests title="Approved digests" d={c.expected} />
              <h4>Current digests</h4>
              <Digests title="Current digests" d={c.actual} />
            </>
          )}
        </>
      )}
      <p>
        {c?.reason === "work_tree_drift"
          ? "Nothing was written. Put these files back as the patch found them, or start a new change on the current source; the approval stands and the apply can be retried."
          : "Nothing was recorded or written. Reload to see the lifecycle as it is now."}
      </p>
    </div>
  );
}

// CancelPanel cancels a lifecycle that is not applying and not over: the
// phase running now is interrupted (its worker's turn, or its test run)
// and cleaned up before the answer comes.
function CancelPanel({ detail, onDone }: { detail: LifecycleDetail; onDone: () => void }) {
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<unknown>();
  const st = detail.summary.status;
  if (st !== "running" && st !== "awaiting_approval" && st !== "approved") {
    return null;
  }
  const go = async () => {
    setBusy(true);
    setErr(undefined);
    try {
      await api.cancel(detail.summary.lifecycle_id, { note: "cancelled in the UI" });
      onDone();
    } catch (e) {
      setErr(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="cancel" aria-labelledby="cancel-h">
      <h2 id="cancel-h">Cancel</h2>
      <p>Cancelling ends the lifecycle: the phase running now is interrupted and its work cleaned up; nothing is applied.</p>
      <button type="button" onClick={go} disabled={busy} aria-describedby="cancel-h">
        {busy ? "Cancelling… (stopping the running phase)" : "Cancel this lifecycle"}
      </button>
      {err ? <ErrorNote error={err} /> : null}
    </section>
  );
}

// ApprovePanel shows the three digests an approval binds and, on request,
// approves exactly those and applies; an approved lifecycle (an apply
// refused earlier, say) can be applied again.
function ApprovePanel({ detail, onDone }: { detail: LifecycleDetail; onDone: () => void }) {
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<ApplyResult>();
  const [approval, setApproval] = useState<Approval | undefined>(detail.approval.approval);
  const [err, setErr] = useState<unknown>();
  const a = detail.approval;
  const st = detail.summary.status;
  const canApply = st === "approved" && approval !== undefined;
  if (!a.awaiting && !canApply && !result && !err) {
    return (
      <>
        <h2>Approval</h2>
        <p className="muted">
          {st === "applied" ? "Applied." : "Not awaiting approval (the lifecycle is " + st.replace(/_/g, " ") + ")."}
        </p>
        {approval && <Digests title="Approved digests" d={approval.digests} />}
      </>
    );
  }
  const go = async () => {
    setBusy(true);
    setErr(undefined);
    try {
      const ap = approval ?? (await api.approve(detail.summary.lifecycle_id, { digests: a.digests }));
      setApproval(ap);
      setResult(await api.apply(detail.summary.lifecycle_id, { approval_id: ap.approval_id }));
      onDone();
    } catch (e) {
      setErr(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="approve" aria-labelledby="ap-h">
      <h2 id="ap-h">{approval ? "Apply the approved patch" : "Approve and apply"}</h2>
      <p>Approving binds exactly these digests. If any of them, or the work tree under the patch, changes before the apply, nothing is written.</p>
      <Digests title={approval ? "Approved digests" : "Digests to approve"} d={approval ? approval.digests : a.digests} />
      {!result && (
        <button type="button" onClick={go} disabled={busy} aria-describedby="ap-h">
          {busy ? "Applying…" : approval ? "Apply the approved patch" : "Approve these digests and apply"}
        </button>
      )}
      <div aria-live="polite">
        {result && (
          <p className="ok" role="status" id="applied">
            Applied patch <span className="mono">{shortId(result.patch_id)}</span> to {result.files} file(s) at {fmtTime(result.applied_at)}.
          </p>
        )}
        {result?.notes?.map((n) => (
          <p key={n} className="muted" data-note="">
            Note: {n}
          </p>
        ))}
      </div>
      {err instanceof ApiError && err.status === 409 ? <ConflictNote c={err.detail.conflict} message={err.detail.message} /> : err ? <ErrorNote error={err} /> : null}
    </section>
  );
}
