// The playground streams answers into the page: the form posts the OpenAI-shaped request to
// the page's own proxy endpoint and reads the server-sent events as they arrive. Without
// JavaScript the form posts normally and the page comes back with the whole answer.
(() => {
  const form = document.getElementById("chat-form");
  if (!form) return;
  const conversation = document.getElementById("conversation");
  const field = (name) => form.elements.namedItem(name);

  function bubble(role, text) {
    const div = document.createElement("div");
    div.className = `message message-${role}`;
    const who = document.createElement("strong");
    who.textContent = role === "user" ? form.dataset.you : form.dataset.assistant;
    const body = document.createElement("div");
    body.className = "message-text";
    body.textContent = text;
    div.append(who, body);
    conversation.append(div);
    return body;
  }

  function insertHtml(html) {
    const holder = document.createElement("div");
    holder.innerHTML = html;
    conversation.append(...holder.childNodes);
  }

  async function showExchange(uid) {
    const url = form.dataset.exchangeUrl.replace("UID", encodeURIComponent(uid)) + "?partial=1";
    // The exchange is logged once the stream has ended on the server: retry briefly.
    for (let attempt = 0; attempt < 25; attempt += 1) {
      const response = await fetch(url);
      if (response.ok) return insertHtml(await response.text());
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  async function readStream(response, target) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      const lines = buffer.split("\n");
      buffer = lines.pop();
      for (const line of lines) {
        const data = line.trim();
        if (!data.startsWith("data:") || data === "data: [DONE]") continue;
        try {
          const chunk = JSON.parse(data.slice(5));
          const delta = (chunk.choices && chunk.choices[0] && chunk.choices[0].delta) || {};
          if (typeof delta.content === "string") {
            text += delta.content;
            target.textContent = text;
          }
        } catch (err) { /* a partial or foreign line: skip it */ }
      }
    }
    return text;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const message = field("message").value.trim();
    if (!message) return;
    const history = JSON.parse(field("history").value || "[]");
    const messages = [...history, { role: "user", content: message }];
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    bubble("user", message);
    field("message").value = "";
    const url = `${form.dataset.streamUrl}?agent=${encodeURIComponent(field("agent").value)}`;
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          "X-CSRFToken": field("csrfmiddlewaretoken").value,
          "X-Memory-Session": field("conversation").value,
        },
        body: JSON.stringify({ model: field("model").value, messages, stream: true }),
      });
      const agent = response.headers.get("X-Memory-Agent");
      if (agent && field("agent").value === "new") {
        const option = new Option("Playground", agent, true, true);
        field("agent").add(option, 0);
      }
      const type = response.headers.get("Content-Type") || "";
      if (type.startsWith("text/html")) {
        insertHtml(await response.text()); // no upstream: what would be injected
      } else if (!response.ok || !type.startsWith("text/event-stream")) {
        let detail = `${response.status}`;
        try { detail = (await response.json()).error.message; } catch (err) { /* not JSON */ }
        bubble("assistant", `${form.dataset.failed} ${detail}`).classList.add("bad");
      } else {
        const target = bubble("assistant", "");
        const answer = await readStream(response, target);
        messages.push({ role: "assistant", content: answer });
        field("history").value = JSON.stringify(messages);
        const uid = response.headers.get("X-Memory-Recall-Id");
        if (uid) await showExchange(uid);
      }
    } catch (err) {
      bubble("assistant", `${form.dataset.failed} ${err}`).classList.add("bad");
    } finally {
      button.disabled = false;
      field("message").focus();
    }
  });
})();
