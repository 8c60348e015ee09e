// dataclaw view: small progressive enhancements (pages work without it; shipped in the package, no CDN).
document.addEventListener("keydown", (e) => {
  if (e.target.closest("input, select, textarea")) return;
  const rel = e.key === "ArrowLeft" ? "prev" : e.key === "ArrowRight" ? "next" : null;
  const link = rel && document.querySelector(`nav.pager a[rel=${rel}]`);
  if (link) window.location.href = link.href;
});
document.querySelectorAll("form.filters select").forEach((s) => s.addEventListener("change", () => s.form.submit()));
document.querySelectorAll("video.clip").forEach((v) => {
  v.addEventListener("error", () => {
    const p = document.createElement("p");
    p.className = "bad";
    p.textContent = "the browser cannot play this clip (error " + (v.error ? v.error.code : "?") + ")";
    v.after(p);
  });
});
