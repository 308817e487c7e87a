# PostgreSQL for the Docker deploy's instance, from the distribution's package: no registry needed,
# the same local Debian base as the project image (deploy/Dockerfile). Built by compose.yaml.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql \
 && rm -rf /var/lib/apt/lists/* && mkdir -p /var/lib/harnessforge-postgres \
 && chown postgres:postgres /var/lib/harnessforge-postgres
COPY postgres-start.sh /usr/local/bin/harnessforge-postgres
# The server refuses to run as root: the package's own unprivileged user.
USER postgres
ENV PGDATA=/var/lib/harnessforge-postgres/data
ENTRYPOINT ["/usr/local/bin/harnessforge-postgres"]
