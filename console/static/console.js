// caddy-air console: the copy button and the playground. No framework,
// no inline handlers (the Content-Security-Policy forbids them).
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  for (const b of document.querySelectorAll("button.copy-button")) {
    b.addEventListener("click", async () => {
      const text = document.getElementById(b.dataset.copy).textContent;
      try {
        await navigator.clipboard.writeText(text);
        b.textContent = "Copied";
      } catch (e) {
        const range = document.createRange();
        range.selectNodeContents(document.getElementById(b.dataset.copy));
        const sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        b.textContent = "Selected: press Ctrl+C";
      }
    });
  }
  const pg = document.getElementById("playground");
  if (pg) playground(pg);
});

function playground(form) {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const conv = document.getElementById("pg-conversation");
  const input = document.getElementById("pg-message");
  const settled = document.getElementById("pg-settled");
  const send = document.getElementById("pg-send");
  let history = [];

  const bubble = (role, text) => {
    const d = document.createElement("div");
    d.className = "msg " + role;
    d.textContent = text;
    conv.appendChild(d);
    return d;
  };

  document.getElementById("pg-clear").addEventListener("click", () => {
    history = [];
    conv.replaceChildren();
    settled.textContent = "";
  });

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    history.push({ role: "user", content: text });
    bubble("user", text);
    const out = bubble("assistant", "");
    out.id = "pg-answer";
    settled.textContent = "streaming…";
    send.disabled = true;
    const messages = [];
    const system = document.getElementById("pg-system").value.trim();
    if (system) messages.push({ role: "system", content: system });
    messages.push(...history);
    let answer = "";
    try {
      const resp = await fetch(form.dataset.endpoint, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify({ model: document.getElementById("pg-model").value, messages }),
      });
      if (!resp.ok) {
        const body = await resp.text();
        let msg = body;
        try { msg = JSON.parse(body).error.message; } catch (e) { /* plain text */ }
        throw new Error(resp.status + ": " + msg);
      }
      const reader = resp.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const event = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          answer += onEvent(event, out, settled);
        }
      }
      history.push({ role: "assistant", content: answer });
    } catch (e) {
      out.classList.add("error");
      out.textContent = "Error " + e.message;
      settled.textContent = "";
      history.pop();
    } finally {
      out.removeAttribute("id");
      send.disabled = false;
    }
  });
}

// onEvent shows one server-sent event and returns the text it added.
function onEvent(event, out, settled) {
  let name = "message";
  let data = "";
  for (const line of event.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data += line.slice(5).trim();
  }
  if (!data || data === "[DONE]") return "";
  const obj = JSON.parse(data);
  if (name === "air.settled") {
    const u = obj.usage;
    const cost = obj.priced ? obj.cost + " " + obj.currency : "unpriced";
    settled.textContent = `${obj.model}: ${u.input_tokens + (u.cache_read_tokens || 0) + (u.cache_creation_tokens || 0)} input + ${u.output_tokens} output tokens, cost ${cost} (request ${obj.request_id})`;
    settled.dataset.cost = obj.cost;
    settled.dataset.state = "settled";
    return "";
  }
  if (obj.error) {
    out.classList.add("error");
    out.textContent += "\n" + obj.error.message;
    return "";
  }
  let added = "";
  for (const c of obj.choices || []) {
    if (c.delta && typeof c.delta.content === "string") added += c.delta.content;
  }
  out.textContent += added;
  return added;
}
