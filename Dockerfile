# One image for every component: `kai scheduler|binder|podgrouper|controllers|admission` (see deploy/helm).
FROM python:3.11-slim AS build
WORKDIR /src
RUN pip install --no-cache-dir build==1.2.2
COPY pyproject.toml README.md ./
COPY src ./src
RUN python -m build --wheel --outdir /dist

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY --from=build /dist/*.whl /tmp/
# Dependencies at the versions pinned in constraints.txt (`make constraints` refreshes it).
COPY constraints.txt /tmp/
# With the dashboard extra: the scheduler's --dashboard-address serves the web dashboard from the image.
RUN pip install --no-cache-dir --constraint /tmp/constraints.txt "$(ls /tmp/*.whl)[dashboard]" \
    && rm /tmp/*.whl /tmp/constraints.txt \
    && groupadd --system --gid 10001 kai \
    && useradd --system --uid 10001 --gid kai --no-create-home --home-dir /nonexistent kai
USER 10001:10001
EXPOSE 8080 9443
ENTRYPOINT ["kai"]
CMD ["--help"]
