// racelab's loader for host pages: one <script src="https://racelab.example/embed.js" async>.
//
// It does three things, for every racelab embed on the page, whenever it was added:
//  1. <racelab-scenario scenario="isolation/write-skew" variant="…" theme="…" view="…"
//     mode="…" autoplay="…" postgres="…"> becomes an iframe of that embed (the element keeps
//     its place); <racelab-scenario src="ws.racelab.json" live="…"> one of the recording
//     player, which fetches the file (resolved against the host page) and plays it;
//     <racelab-scenario lesson="<id>"> a kept lesson, taken alone (predict, run, score). A live
//     embed may name its racelab (server="https://racelab.example", this script's own by
//     default) and a recording to play instead when that racelab does not answer
//     (fallback="ws.racelab.json"), as a blog hosting an exported player does;
//  2. every racelab iframe (the element's, or one pasted as an <iframe>) takes the height its
//     page reports, so the finished run is never cut off behind a scrollbar;
//  3. an embed with theme=host is told the host's colours where it sits (light or dark text,
//     and the colour scheme that keeps its background transparent), since it cannot read them.
// The older one-tag form, <script src=…/embed.js data-scenario=…>, becomes an element after
// the script. Nothing here touches the host page's styles or needs a cookie.
(function () {
  var script = document.currentScript;
  var here = script ? script.src : location.href;
  var origin = new URL(here).origin;
  var OPTIONS = ["variant", "mode", "theme", "autoplay", "view", "postgres", "live", "predict"];
  // The recording player, beside this script: racelab's own page on a racelab server; the
  // exported player.html on a static host (`racelab export --player` writes this line).
  var PLAYER = "/embed/recording";
  var player = new URL(PLAYER, here).href;

  // Every racelab whose embeds are on this page, by origin: this script's, and any named.
  var servers = {};
  servers[origin] = true;

  // Whether `frame` shows a racelab embed of a known server (or this export's player).
  function isEmbed(frame) {
    var src = frame.getAttribute("src") || "";
    if (src.indexOf(player + "?") === 0) return true;
    for (var server in servers) if (src.indexOf(server + "/embed/") === 0) return true;
    return false;
  }

  // Whether the racelab at `server` answers within 4 s (one look per server per page): its
  // /healthz, asked without reading the answer, so no CORS header is needed.
  var looks = {};
  function answers(server) {
    if (!looks[server]) {
      var abort = window.AbortController ? new AbortController() : null;
      var timer = abort && setTimeout(function () { abort.abort(); }, 4000);
      looks[server] = fetch(server + "/healthz", { mode: "no-cors", cache: "no-store", signal: abort && abort.signal })
        .then(function () { return true; }, function () { return false; })
        .then(function (up) { clearTimeout(timer); return up; });
    }
    return looks[server];
  }

  // `color` (any CSS colour the browser computes: rgb(), oklch(), color(srgb …)) as
  // [r, g, b, a] in 0–255, drawn on a 1×1 canvas so the browser converts it.
  var canvas;
  function rgba(color) {
    canvas = canvas || document.createElement("canvas");
    canvas.width = canvas.height = 1;
    var context = canvas.getContext("2d", { willReadFrequently: true });
    if (!context) return [255, 255, 255, 0];
    context.clearRect(0, 0, 1, 1);
    context.fillStyle = color;
    context.fillRect(0, 0, 1, 1);
    return context.getImageData(0, 0, 1, 1).data;
  }

  // Light or dark, as the host paints the place where `element` sits: the first ancestor with a
  // background colour of its own decides (a page with none is white).
  function hostLooksDark(element) {
    for (var node = element.parentElement; node; node = node.parentElement) {
      var c = rgba(getComputedStyle(node).backgroundColor);
      if (c[3] > 127) return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2] < 128;
    }
    return false;
  }

  // The colour scheme the browser uses for `frame` in the host: the embed uses the same one,
  // or the browser would paint an opaque backdrop behind its transparent page.
  function schemeOf(frame) {
    var scheme = getComputedStyle(frame).colorScheme || "normal";
    var dark = scheme.indexOf("dark") >= 0;
    var light = scheme.indexOf("light") >= 0;
    var prefersDark = window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches;
    return dark && (!light || prefersDark) ? "dark" : "light";
  }

  if (!window.customElements.get("racelab-scenario")) {
    class RacelabScenario extends HTMLElement {
      static get observedAttributes() { return ["scenario", "spec", "lesson", "src", "server", "fallback"].concat(OPTIONS); }
      connectedCallback() { this.render(); }
      attributeChangedCallback() { if (this.isConnected) this.render(); }
      render() {
        // A reader's saved spec (spec="<id>") embeds at /embed/s/<id>, a lesson (lesson="<id>")
        // at /embed/lessons/<id>; a recording (src=…) plays in the player, which needs no
        // racelab server.
        var spec = this.getAttribute("spec");
        var lesson = this.getAttribute("lesson");
        var recording = this.getAttribute("src");
        var scenario = spec ? "s/" + spec : lesson ? "lessons/" + lesson : this.getAttribute("scenario");
        if (!scenario && !recording) return;
        var named = this.getAttribute("server");
        var server = named ? new URL(named, document.baseURI).origin : origin;
        servers[server] = true;
        var fallback = this.getAttribute("fallback");
        if (recording || !fallback) {
          this.show(recording ? this.playing(recording) : this.live(server, scenario), recording || scenario);
          return;
        }
        var element = this;
        answers(server).then(function (up) {
          if (up) element.show(element.live(server, scenario), scenario);
          // "Run it live" stays on offer, for when that racelab is back.
          else element.show(element.playing(fallback, server), fallback);
        });
      }
      // The query of this element's options.
      options() {
        var query = new URLSearchParams();
        var element = this;
        OPTIONS.forEach(function (name) {
          if (!element.hasAttribute(name)) return;
          var value = element.getAttribute(name);
          // `autoplay` and `predict` are boolean attributes (present, even empty, means on);
          // `autoplay` may also be `visible`.
          if ((name === "autoplay" || name === "predict") && (value === "" || value === name)) value = "1";
          query.set(name, value);
        });
        return query;
      }
      live(server, scenario) {
        return server + "/embed/" + scenario + "?" + this.options().toString();
      }
      playing(recording, server) {
        var query = this.options();
        query.set("src", new URL(recording, document.baseURI).href);
        if (server && !query.has("live")) query.set("live", server);
        return player + "?" + query.toString();
      }
      show(src, what) {
        if (!this.frame) {
          this.frame = document.createElement("iframe");
          this.frame.loading = "lazy";
          this.frame.style.cssText = "display:block;width:100%;min-height:240px;border:0";
          this.style.display = "block";
          this.appendChild(this.frame);
        }
        if (this.frame.getAttribute("src") !== src) {
          this.frame.setAttribute("src", src);
          this.frame.title = "racelab: " + what;
        }
      }
    }
    window.customElements.define("racelab-scenario", RacelabScenario);

    // One listener for every embed: each height goes to its own iframe only, found by the
    // window that sent it.
    window.addEventListener("message", function (event) {
      var data = event.data;
      if (!servers[event.origin] || !data || data.type !== "racelab:height" || !(data.height > 0)) return;
      var frames = document.getElementsByTagName("iframe");
      for (var i = 0; i < frames.length; i++) {
        var frame = frames[i];
        if (frame.contentWindow !== event.source || !isEmbed(frame)) continue;
        frame.style.height = Math.ceil(data.height) + "px";
        if (/[?&]theme=host(&|$)/.test(frame.getAttribute("src"))) {
          event.source.postMessage(
            { type: "racelab:host", dark: hostLooksDark(frame), scheme: schemeOf(frame) },
            event.origin
          );
        }
      }
    });
  }

  if (script && script.dataset.scenario) {
    var element = document.createElement("racelab-scenario");
    element.setAttribute("scenario", script.dataset.scenario);
    OPTIONS.forEach(function (name) {
      if (script.dataset[name]) element.setAttribute(name, script.dataset[name]);
    });
    script.parentNode.insertBefore(element, script.nextSibling);
  }
})();
