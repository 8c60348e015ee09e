// dataclaw view: human review of samples and tasks (shipped in the package, no CDN).
// Served: a verdict is POSTed to the run (RUN/_viewer/verdicts.jsonl). Static export: verdicts are kept in
// this browser (localStorage) and downloaded as a file for `dataclaw view --import-verdicts FILE RUN`.
(() => {
  const box = document.querySelector("section.review");
  if (!box) return;
  const d = box.dataset;
  const status = box.querySelector(".review-status");
  const note = box.querySelector("textarea[name=note]");
  const who = box.querySelector("input[name=reviewer]");
  const storeKey = "dataclaw.verdicts:" + d.run;
  const skipKey = "dataclaw.skip-reviewed";
  who.value = localStorage.getItem("dataclaw.reviewer") || "";
  who.addEventListener("change", () => localStorage.setItem("dataclaw.reviewer", who.value.trim()));

  const local = () => JSON.parse(localStorage.getItem(storeKey) || "[]");
  const decidedHere = () => {
    const mine = local().filter((v) => v.id === d.id && v.verdict !== "note");
    if (mine.length) return mine[mine.length - 1].verdict;
    const baked = JSON.parse(d.review || "{}");
    return baked.decision || null;
  };
  const link = (rel) => document.querySelector(`nav.pager a[rel=${rel}]`);
  const go = (a) => { if (a) window.location.href = a.href; };
  const show = (text, bad) => {
    status.textContent = text;
    status.className = "review-status " + (bad ? "bad" : "ok");
  };
  const mark = (verdict) => {
    const state = box.querySelector(".review-state");
    if (!state || verdict === "note") return;
    state.textContent = verdict === "accept" ? "accepted" : "rejected";
    state.className = "badge review-state " + (verdict === "accept" ? "ok" : "bad");
  };

  if (!d.save) {  // static export: what this browser decided shows over what the run had
    const mine = local().filter((v) => v.id === d.id && v.verdict !== "note");
    if (mine.length) mark(mine[mine.length - 1].verdict);
  }

  async function save(verdict) {
    const text = note.value.trim();
    if (verdict === "note" && !text) { show("write the note first", true); note.focus(); return false; }
    const v = { id: d.id, kind: d.kind, stage: d.stage, verdict, note: text, reviewer: who.value.trim() };
    if (d.save) {
      let res;
      try {
        res = await fetch(d.save, { method: "POST", headers: { "Content-Type": "application/json" },
                                    body: JSON.stringify(v) });
      } catch (e) { show("not saved: the viewer is not reachable", true); return false; }
      const body = await res.json().catch(() => ({}));
      if (!res.ok) { show("not saved: " + (body.error || res.status), true); return false; }
    } else {
      v.reviewer = v.reviewer || "anonymous";
      v.time = new Date().toISOString();
      const all = local();
      all.push(v);
      localStorage.setItem(storeKey, JSON.stringify(all));
    }
    mark(verdict);
    if (verdict === "note") note.value = "";
    show(verdict === "note" ? "note saved" : verdict + "ed", false);
    return true;
  }

  function nextUnreviewed() {
    if (d.unreviewed) { window.location.href = d.unreviewed; return; }
    sessionStorage.setItem(skipKey, "1");
    const next = link("next");
    if (next) go(next); else { sessionStorage.removeItem(skipKey); show("no unreviewed record after this one", false); }
  }
  // static export: keep walking while looking for an unreviewed record
  if (!d.save && sessionStorage.getItem(skipKey)) {
    if (decidedHere() && link("next")) { go(link("next")); return; }
    sessionStorage.removeItem(skipKey);
  }

  box.querySelectorAll("button[data-verdict]").forEach((b) =>
    b.addEventListener("click", async () => {
      const ok = await save(b.dataset.verdict);
      if (ok && b.dataset.verdict !== "note") go(link("next"));
    }));
  note.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {  // saved: the keys are the page's again
      e.preventDefault();
      save("note").then((ok) => { if (ok) note.blur(); });
    }
    if (e.key === "Escape") note.blur();
  });
  document.addEventListener("keydown", async (e) => {
    if (e.target.closest("input, select, textarea") || e.ctrlKey || e.metaKey || e.altKey) return;
    const key = e.key.toLowerCase();
    if (key === "a" || key === "r") {
      e.preventDefault();
      if (await save(key === "a" ? "accept" : "reject")) go(link("next"));
    } else if (key === "n") { e.preventDefault(); note.focus(); }
    else if (key === "j") go(link("next"));
    else if (key === "k") go(link("prev"));
    else if (key === "u") nextUnreviewed();
  });

  const dl = box.querySelector(".review-download");
  if (dl) {
    const count = () => local().length;
    dl.textContent = `download verdicts (${count()})`;
    dl.addEventListener("click", () => {
      const lines = local().map((v) => JSON.stringify(v)).join("\n");
      const blob = new Blob([lines ? lines + "\n" : ""], { type: "application/x-ndjson" });
      const a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = "verdicts.jsonl";
      document.body.append(a);
      a.click();
      a.remove();
    });
  }
})();
