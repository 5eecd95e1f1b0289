# syntax=docker/dockerfile:1
# racelab image: the browser app (built by Trunk into dist/) and the `racelab` server binary.
# Build: `docker build -t racelab .` (or `docker compose up --build`). Needs BuildKit (the default
# builder in current Docker) for the cache mounts below.

# ---- build ---------------------------------------------------------------------------------
FROM rust:1-bookworm AS build
WORKDIR /src

# Tools first, so these slow layers stay cached while the code changes.
# nodejs/npm only to install binaryen's wasm-opt: Debian's own binaryen (108) produces a module
# that fails in the browser.
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs npm \
 && rm -rf /var/lib/apt/lists/*
RUN npm install --prefix /opt/binaryen --no-audit --no-fund binaryen@132
ENV PATH="/opt/binaryen/node_modules/.bin:${PATH}"

RUN rustup target add wasm32-unknown-unknown
# Pinned: 0.21.14 is the Trunk version this project is built and tested with.
RUN cargo install trunk --version 0.21.14 --locked --no-default-features

# wasm-bindgen-cli must be exactly the wasm-bindgen version in Cargo.lock (Trunk checks it), so
# only Cargo.lock is copied here: this layer rebuilds when the lockfile changes, not the code.
# No --locked: the CLI's lockfile pins a webpki-roots release that some registry mirrors lack.
COPY Cargo.lock ./
RUN version="$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock \
                | sed -n 's/^version = "\(.*\)"$/\1/p')" \
 && echo "wasm-bindgen in Cargo.lock: ${version}" \
 && [ -n "${version}" ] && [ "$(printf '%s\n' "${version}" | wc -l)" -eq 1 ] \
 && cargo install wasm-bindgen-cli --version "${version}"

COPY . .
# Trunk.toml sets offline = true (Trunk never downloads tools and runs cargo --offline), so
# fetch every dependency, host and wasm32 alike, first.
# The binary is copied out of target/ inside the same RUN because target/ is a cache mount.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target \
    cargo fetch --locked \
 && trunk build --release \
 && cargo build --release --locked -p racelab \
 && cp target/release/racelab /usr/local/bin/racelab

# ---- runtime -------------------------------------------------------------------------------
FROM debian:bookworm-slim
# ca-certificates for TLS to managed services; curl for the compose healthcheck (/healthz);
# fonts-dejavu-core for the pictures of runs as PNG (/runs/<id>.png, link previews).
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl fonts-dejavu-core \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --no-create-home --uid 10001 racelab

COPY --from=build /usr/local/bin/racelab /usr/local/bin/racelab
# The server serves the app from ./dist, relative to the working directory.
COPY --from=build /src/dist /app/dist
WORKDIR /app
USER racelab
EXPOSE 8080
CMD ["racelab", "serve"]
