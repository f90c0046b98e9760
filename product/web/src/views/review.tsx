import { AcceptanceCriterion, Diff, DiffLine, Patch, Review, TestOutcome } from "../api";
import { fmtMs } from "../format";
import { WorkerWords } from "./common";

// What a person judges before approving: the diff Needle computed from
// the stored patch, each criterion as the user wrote it with the
// verifier's verdict, the tests' outcomes, and what the reviewer and the
// verifier wrote — always labelled as model text Needle did not check.

// DiffView shows a patch as a unified diff, one table a file, with each
// added and removed line marked by a sign and a label, not by colour only.
export function DiffView({ patch, diff }: { patch: Patch; diff?: Diff }) {
  if (!diff) return <p className="muted">No diff.</p>;
  if (diff.error) {
    return (
      <p className="error" role="alert" id="diff-error">
        Needle could not compute the diff: {diff.error}
      </p>
    );
  }
  const files: { path: string; lines: DiffLine[] }[] = [];
  for (const l of diff.lines) {
    if (l.kind === "file") files.push({ path: l.path ?? l.text, lines: [] });
    else if (files.length > 0) files[files.length - 1].lines.push(l);
  }
  return (
    <div className="diff" id="diff">
      <p className="muted">
        Computed by Needle from the stored patch <span className="mono">{patch.patch_id}</span> against the base it was made from
        (the same as <code>needle change diff</code>).
      </p>
      {files.map((f) => (
        <figure key={f.path} className="diff-file" data-diff-file={f.path} aria-label={"Diff of " + f.path}>
          <figcaption>
            <code>{f.path}</code>
          </figcaption>
          <table className="diff-lines">
            <caption className="sr-only">Changes to {f.path}</caption>
            <tbody>
              {f.lines.map((l, i) => (
                <tr key={i} className={"diff-" + l.kind} data-line={l.kind}>
                  <td className="diff-sign" aria-label={signLabel(l.kind)}>
                    {sign(l.kind)}
                  </td>
                  <td className="diff-text">
                    <pre>{l.text}</pre>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </figure>
      ))}
      {diff.truncated && <p className="muted">The diff is longer than the UI shows; run needle change diff for all of it.</p>}
    </div>
  );
}

const sign = (k: string) => (k === "add" ? "+" : k === "del" ? "−" : "");
const signLabel = (k: string) => (k === "add" ? "added" : k === "del" ? "removed" : k === "context" ? "unchanged" : k);

// AcceptanceList shows each criterion as written, with the verifier's
// status and reason.
export function AcceptanceList({ items }: { items: AcceptanceCriterion[] }) {
  return (
    <ol className="acceptance" aria-label="Acceptance criteria">
      {items.map((c) => (
        <li key={c.ordinal} data-criterion={c.ordinal}>
          <q className="criterion-text">{c.text}</q>{" "}
          <span className={"badge " + (c.status === "met" ? "hit" : "miss")} data-verdict={c.status || "unverified"}>
            {c.status ? c.status.replace(/_/g, " ") : "not verified yet"}
          </span>
          {c.reason.text && (
            <div>
              <WorkerWords w={c.reason} what="verifier's reason, model text" />
            </div>
          )}
        </li>
      ))}
    </ol>
  );
}

// ReviewFindings shows the advisory review's findings as model text.
export function ReviewFindings({ review }: { review?: Review }) {
  if (!review) return <p className="muted">Not reviewed yet.</p>;
  if (review.findings.length === 0) return <p className="muted">The reviewer reported no findings.</p>;
  return (
    <ul className="findings" aria-label="Review findings">
      {review.findings.map((f, i) => (
        <li key={i} data-finding={f.severity}>
          <span className="badge">{f.severity}</span> {f.criterion ? `criterion ${f.criterion}` : "the whole patch"}:{" "}
          <WorkerWords w={f.summary} what="reviewer's words, model text" />
        </li>
      ))}
    </ul>
  );
}

// TestList shows each frozen test plan's outcome and how long it ran.
export function TestList({ tests }: { tests: TestOutcome[] }) {
  return (
    <ul>
      {tests.map((t) => (
        <li key={t.test} data-test={t.test}>
          <code>{t.test}</code> <span className={"badge " + (t.outcome === "passed" ? "hit" : "miss")}>{t.outcome || "not run"}</span>
          {t.outcome && <span className="muted"> in {fmtMs(t.duration_ms)}</span>}
        </li>
      ))}
    </ul>
  );
}
