# One image for every service; the container's command names the service (see docker-compose.yml).
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts=false && npm cache clean --force
COPY bin ./bin
COPY services ./services
COPY shared ./shared
COPY topics ./topics
COPY contracts ./contracts
COPY tsconfig.json ./
USER node
ENTRYPOINT ["node", "--import", "tsx", "bin/start.ts"]
