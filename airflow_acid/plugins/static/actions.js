/* The console's actions (routes/actions.py): abort or requeue a compaction, undo one, abort a transaction. A click
   opens a dialog that says what the action will do — for a transaction, what it blocks, asked from the server —
   and only "confirm" sends the same-origin JSON POST (CSRF: JSON only). The answer is shown at the top of the page
   after it reloads, so every table shows the new state. Buttons are rendered only for users allowed to act; the
   server checks again. */
(function () {
  "use strict";

  var root = document.body.dataset.root || "";
  var ANSWER_KEY = "acid-action-answer";
  var LATER = "the Initiator may queue it again at its next cycle while its thresholds say so " +
    "(set no_auto_compaction on the table to stop that)";

  var ACTIONS = {
    "abort-compaction": {
      title: function (b) { return "Abort " + b.dataset.what + "?"; },
      confirm: "Abort compaction",
      url: function (id) { return root + "/api/compactions/" + id + "/abort"; },
      done: "aborted",
      consequences: function (b) {
        var running = b.dataset.state === "working";
        return Promise.resolve([
          running ? "abort its compactor transaction: the running Spark job can never commit, and its output is " +
            "discarded when the job ends" : "take it off the queue before any worker runs it",
          "move it to the history as 'aborted', with your name",
          LATER
        ]);
      }
    },
    "requeue-compaction": {
      title: function (b) { return "Requeue " + b.dataset.what + "?"; },
      confirm: "Requeue",
      url: function (id) { return root + "/api/compactions/" + id + "/requeue"; },
      done: "requeued",
      consequences: function (b) {
        return Promise.resolve([
          "queue a new 'initiated' compaction of the same table/partition, type, pool and properties (this one " +
            "stays '" + b.dataset.state + "' in the history)",
          "be refused if a compaction of it is already scheduled (Hive's rule)",
          "run when the acid_compaction DAG next runs"
        ]);
      }
    },
    "undo-compaction": {
      title: function (b) { return "Undo " + b.dataset.what + "?"; },
      confirm: "Undo compaction",
      url: function (id) { return root + "/api/compactions/" + id + "/undo"; },
      done: "undone",
      consequences: function () {
        return Promise.resolve([
          "abort its committed output: new readers see the files it replaced again",
          "delete its output once no open transaction may still read it",
          "be refused, with the reason, when the undo window passed or undoing would lose data"
        ]);
      }
    },
    "doctor-fix": {
      title: function (b) { return "Fix " + b.dataset.what + "?"; },
      confirm: "Apply fix",
      url: function (id) { return root + "/api/doctor/fix?finding=" + encodeURIComponent(id); },
      done: "applied",
      consequences: function (b) {
        return Promise.resolve([
          "run " + b.dataset.statement,
          b.dataset.changes,
          "be refused, with the reason, if the state changed meanwhile"
        ]);
      }
    },
    "abort-transaction": {
      title: function (b) { return "Abort " + b.dataset.what + "?"; },
      confirm: "Abort transaction",
      url: function (id) { return root + "/api/transactions/" + id + "/abort"; },
      done: "aborted",
      consequences: function (b) {
        return fetch(root + "/api/transactions/" + b.dataset.id + "/blocking", {
          credentials: "same-origin", headers: { "Accept": "application/json" }
        }).then(function (response) {
          return response.json().then(function (payload) {
            if (!response.ok) throw new Error(payload.detail || response.statusText);
            return payload.consequences.concat(payload.notes || []);
          });
        });
      }
    }
  };

  function show(box, kind, text, link) {
    if (!box) return;
    box.className = "result action-result " + kind;
    box.textContent = text;
    if (link) {  // an approval run ([acid] action_approval = hitl): open it in Airflow
      var anchor = document.createElement("a");
      anchor.href = link;
      anchor.textContent = "open the approval run";
      box.appendChild(document.createTextNode(" — "));
      box.appendChild(anchor);
    }
  }

  function post(url) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Accept": "application/json" }, body: "{}"
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (payload) {
        return { response: response, payload: payload };
      });
    });
  }

  function ask(dialog, title, consequences, confirmLabel) {
    dialog.querySelector("h3").textContent = title;
    var list = dialog.querySelector("ul.consequences");
    list.innerHTML = "";
    consequences.forEach(function (line) {
      var item = document.createElement("li");
      item.textContent = line;
      list.appendChild(item);
    });
    var confirm = dialog.querySelector("[data-confirm]");
    confirm.textContent = confirmLabel;
    confirm.className = "danger-confirm";
    return new Promise(function (resolve) {
      dialog.addEventListener("close", function () { resolve(dialog.returnValue === "confirm"); }, { once: true });
      dialog.returnValue = "";
      dialog.showModal();
    });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-acid-action]");
    if (!button) return;
    var action = ACTIONS[button.dataset.acidAction];
    var dialog = document.getElementById("acid-confirm");
    var box = document.getElementById("acid-action-result");
    if (!action || !dialog) return;
    button.disabled = true;
    action.consequences(button).then(function (lines) {
      return ask(dialog, action.title(button), lines, action.confirm);
    }).then(function (confirmed) {
      if (!confirmed) return null;
      show(box, "", "Sending…");
      return post(action.url(button.dataset.id)).then(function (r) {
        if (!r.response.ok) {
          var detail = r.payload && r.payload.detail;
          return show(box, "error", (typeof detail === "string" ? detail : r.response.status + " " +
            r.response.statusText));
        }
        var ok = r.payload[action.done] === true;
        sessionStorage.setItem(ANSWER_KEY, JSON.stringify({ kind: ok ? "ok" : "warn", text: r.payload.message,
                                                            link: r.payload.awaiting_approval ? r.payload.run_url : null }));
        location.reload();
      });
    }).catch(function (error) {
      show(box, "error", "The request failed: " + error.message);
    }).then(function () { button.disabled = false; });
  });

  var stored = sessionStorage.getItem(ANSWER_KEY);
  if (stored) {
    sessionStorage.removeItem(ANSWER_KEY);
    try {
      var answer = JSON.parse(stored);
      show(document.getElementById("acid-action-result"), answer.kind, answer.text, answer.link);
    } catch (ignored) { /* a stale or foreign value: nothing to show */ }
  }
})();
