# One image for every service; the container's command names the service (see docker-compose.yml).
# Build stage: compile TypeScript with the dev dependencies.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY contracts ./contracts
COPY services ./services
COPY shared ./shared
COPY topics ./topics
COPY test/fixtures ./test/fixtures
RUN npm run build

# Runtime stage: production dependencies and the compiled code only.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/dist ./dist
USER node
ENTRYPOINT ["node", "dist/bin/start.js"]
