/* The ACID console's few interactions: compaction requests and undos (queued through this app's JSON API, or a run of
   acid_manual_compaction through Airflow's REST API), refreshing the queue afterwards, filter selects that
   submit on change, and the "all columns" switch. Same-origin fetches carry Airflow's session cookie. */
(function () {
  "use strict";

  var root = document.body.dataset.root || "";
  var airflowBase = document.body.dataset.airflowBase || "";
  var MANUAL_DAG = "acid_manual_compaction";

  function esc(text) {
    return String(text == null ? "" : text).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  function show(box, kind, html) {
    box.className = "result " + kind;
    box.innerHTML = html;
  }

  /* FastAPI answers {"detail": "..."} or {"detail": [{"loc": [...], "msg": "..."}]} */
  function problem(payload, response) {
    var detail = payload && payload.detail;
    if (Array.isArray(detail)) {
      return detail.map(function (d) { return (d.loc || []).slice(1).join(".") + ": " + d.msg; }).join("; ");
    }
    return detail || response.status + " " + response.statusText;
  }

  function request(form) {
    var f = form.elements;
    return {
      database: f.database.value.trim() || "default",
      table: f.table.value.trim(),
      partition: f.partition.value.trim() || null,
      type: f.type.value
    };
  }

  function postJson(url, body) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Accept": "application/json" },
      body: JSON.stringify(body)
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (payload) {
        return { response: response, payload: payload };
      });
    });
  }

  /* Re-read this page and swap in the fresh content of every [data-refresh] section. */
  function refresh() {
    var sections = document.querySelectorAll("[data-refresh][id]");
    if (!sections.length) return Promise.resolve();
    return fetch(location.href, { credentials: "same-origin" }).then(function (response) {
      if (!response.ok) return;
      return response.text().then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        sections.forEach(function (old) {
          var replacement = fresh.getElementById(old.id);
          if (replacement) old.replaceWith(replacement);
        });
      });
    });
  }

  function queue(form, box) {
    return postJson(root + "/api/compactions", request(form)).then(function (r) {
      if (!r.response.ok) return show(box, "error", esc(problem(r.payload, r.response)));
      var lines = r.payload.results.map(function (item) {
        var where = esc(item.database + "." + item.table + (item.partition ? "/" + item.partition : ""));
        if (item.compaction_id != null) {
          return esc(item.type) + " compaction <b>" + item.compaction_id + "</b> of " + where +
            ' queued: <span class="badge s-initiated">initiated</span>';
        }
        return where + ": " + '<span class="badge s-' + esc(item.state).replace(/ /g, "-") + '">' +
          esc(item.state) + "</span> " + esc(item.message);
      });
      var kind = r.payload.accepted ? "ok" : "warn";
      var note = r.payload.accepted ? dagNote(r.payload.dags || []) : "";
      if (note.indexOf("paused") >= 0) kind = "warn";
      show(box, kind, (lines.join("<br>") || "Nothing to compact.") + note);
      return refresh();
    });
  }

  /* What happens next to a queued compaction: acid_compaction paused (it stays 'initiated'), or its next run. */
  function dagNote(dags) {
    return dags.map(function (d) {
      if (d.paused) {
        return "<br><b>" + esc(d.dag_id) + " is paused</b> — the compaction stays 'initiated' until you unpause it.";
      }
      if (d.next_run) {
        return "<br>" + esc(d.dag_id) + " runs next at " + esc(d.next_run.replace("T", " ").replace(/\+00:00$/, "")) +
          " UTC.";
      }
      return d.known ? "" : "<br>" + esc(d.summary || "");
    }).join("");
  }

  function trigger(form, box) {
    var body = request(form);
    body.wait = form.elements.wait.checked;
    var api = airflowBase + "/api/v2/dags/" + MANUAL_DAG;
    return postJson(api + "/dagRuns", { logical_date: null, conf: body }).then(function (r) {
      if (!r.response.ok) return show(box, "error", MANUAL_DAG + ": " + esc(problem(r.payload, r.response)));
      var run = r.payload;
      var link = airflowBase + "/dags/" + MANUAL_DAG + "/runs/" + encodeURIComponent(run.dag_run_id);
      show(box, "ok", "Started run <a target=\"_top\" href=\"" + esc(link) + "\">" + esc(run.dag_run_id) +
        "</a> of " + MANUAL_DAG + " (" + esc(run.state) + ").");
      return fetch(api, { credentials: "same-origin" }).then(function (response) {
        return response.ok ? response.json() : null;
      }).then(function (dag) {
        if (dag && dag.is_paused) {
          box.insertAdjacentHTML("beforeend", "<br>The DAG is paused: the run starts once you unpause it.");
          box.className = "result warn";
        }
      });
    });
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches("[data-acid-request]")) return;
    event.preventDefault();
    var box = form.querySelector(".result");
    if (!form.elements.table.value.trim()) {
      show(box, "error", "Name the table to compact.");
      form.elements.table.focus();
      return;
    }
    var via = event.submitter && event.submitter.value === "dag" ? trigger : queue;
    var fieldset = form.querySelector("fieldset");
    fieldset.disabled = true;
    show(box, "", "Sending…");
    via(form, box).catch(function (error) {
      show(box, "error", "The request failed: " + esc(error.message));
    }).then(function () { fieldset.disabled = false; });
  });

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches("[data-acid-undo]")) return;
    event.preventDefault();
    var box = form.querySelector(".result");
    var id = parseInt(form.elements.compaction_id.value, 10);
    if (!(id > 0)) {
      show(box, "error", "Give the id of the compaction to undo.");
      return;
    }
    var fieldset = form.querySelector("fieldset");
    fieldset.disabled = true;
    show(box, "", "Sending…");
    postJson(root + "/api/compactions/" + id + "/undo", {}).then(function (r) {
      if (!r.response.ok) return show(box, "error", esc(problem(r.payload, r.response)));
      show(box, r.payload.undone ? "ok" : "warn", esc(r.payload.message));
      return refresh();
    }).catch(function (error) {
      show(box, "error", "The request failed: " + esc(error.message));
    }).then(function () { fieldset.disabled = false; });
  });

  /* A compaction's id opens (and closes) its details row: figures, the Airflow task and Spark links. */
  document.addEventListener("click", function (event) {
    var button = event.target.closest("button.disclose");
    if (!button) return;
    var details = document.getElementById(button.getAttribute("aria-controls"));
    if (!details) return;
    var open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", open ? "true" : "false");
    details.hidden = !open;
  });

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target.matches("select[data-autosubmit]")) target.form.requestSubmit();
    if (target.matches("input[data-all-columns]")) {
      var table = document.getElementById(target.dataset.allColumns);
      if (table) table.classList.toggle("all-columns", target.checked);
    }
  });
})();
