// The one-time reveal page: the token rides in the URL's fragment (never sent to a server, a
// Referer or a log). It is taken out of the address bar at once, and traded for the secret only
// when the person presses the button, so that a link preview or a prefetch uses nothing up.
const token = location.hash.slice(1);
if (token) history.replaceState(null, "", location.pathname);

const $ = (id) => document.getElementById(id);

async function reveal() {
  $("reveal-show").disabled = true;
  let body = null;
  let ok = false;
  try {
    const r = await fetch("/console/reveal", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ token }),
      cache: "no-store",
      referrerPolicy: "no-referrer",
    });
    ok = r.ok;
    body = await r.json();
  } catch (e) {
    body = { detail: "The server could not be reached: " + e.message };
  }
  $("reveal-show").hidden = true;
  if (!ok) {
    $("reveal-problem").textContent = (body && body.detail) || "This link reveals nothing.";
    $("reveal-problem").hidden = false;
    return;
  }
  const what = body.subject || {};
  $("reveal-what").textContent =
    "The new " + (body.field || "secret") + " of the " + (what.type || "object") + " " + (what.id || "") + ":";
  $("reveal-what").hidden = false;
  $("reveal-secret").value = body.secret;
  $("reveal-grace").textContent = body.grace
    ? "The previous secret keeps working beside it for " + body.grace + "; give this one to the receiver within that time."
    : "";
  $("reveal-shown").hidden = false;
  $("reveal-secret").focus();
  $("reveal-secret").select();
}

if (token) {
  $("reveal-show").hidden = false;
  $("reveal-show").addEventListener("click", reveal);
} else {
  $("reveal-missing").hidden = false;
}
