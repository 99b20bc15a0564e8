DROP TABLE previews;
