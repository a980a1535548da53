// The workbench's only script (served from the package; the page's policy allows no other).
// It shows what agents write without a reload, and gives "/" to the search box. Text from the
// server arrives as server-escaped HTML parsed by DOMParser (nothing in it runs) or as JSON
// put in with textContent.
"use strict";

(function () {
  const POLL_MS = 3000;
  const body = document.body;
  const changesUrl = body.dataset.changes;
  const home = body.dataset.home;  // the list's address: the launch's root, then "/"
  let seen = null;

  function sameView() {
    const here = new URL(window.location.href);
    return here.pathname === home && !here.searchParams.get("q") &&
      (here.searchParams.get("page") || "1") === "1";
  }

  async function refreshList() {
    const answer = await fetch(window.location.href, {credentials: "same-origin"});
    if (!answer.ok) return false;
    const fresh = new DOMParser().parseFromString(await answer.text(), "text/html");
    for (const id of ["rows", "count"]) {
      const now = document.getElementById(id);
      const next = fresh.getElementById(id);
      if (!now || !next) return false;
      now.replaceChildren(...Array.from(next.childNodes, (n) => document.importNode(n, true)));
    }
    return true;
  }

  function say(text) {
    const live = document.getElementById("live");
    if (!live) return;
    live.textContent = text;
    live.hidden = false;
  }

  async function poll() {
    try {
      const answer = await fetch(changesUrl, {credentials: "same-origin"});
      if (answer.ok) {
        const state = JSON.stringify(await answer.json());
        if (seen !== null && state !== seen) {
          if (sameView() && await refreshList()) {
            say("Updated: new changes are shown.");
          } else {
            say("Memories changed since this page was loaded; reload to see them.");
          }
        }
        seen = state;
      }
    } catch (e) {
      // the daemon or the workbench went away: try again at the next tick
    }
    window.setTimeout(poll, POLL_MS);
  }

  document.addEventListener("keydown", (event) => {
    const search = document.querySelector("input[name=q]");
    if (event.key === "/" && search && document.activeElement.tagName !== "INPUT" &&
        document.activeElement.tagName !== "TEXTAREA") {
      event.preventDefault();
      search.focus();
    }
  });

  if (changesUrl) poll();
})();
